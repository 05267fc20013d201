//! A function's routes, each said once with the methods it serves, so the
//! list of what a function answers can be held against the deployment's
//! routes (`template.yaml`, where API Gateway answers 404 for any route it
//! does not declare): a route served here and not declared there is a
//! feature that works locally and not where it is deployed.
//!
//! axum's `Router` cannot list its routes; [`Routes`] builds one while
//! keeping the list. Every route answers any other method with `405` and
//! the `Allow` it was given, and a route under [`Routes::cors`] also
//! answers its browser's preflight (`OPTIONS`).

use std::convert::Infallible;

use axum::Router;
use axum::extract::Request;
use axum::response::IntoResponse;
use axum::routing::{MethodRouter, Route};
use tower::{Layer, Service};

use super::only;

/// One method at one path (axum's syntax, `{name}` for a segment: the same
/// as API Gateway's).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Served {
    /// `GET`, `PUT`, ... or `OPTIONS` for a CORS preflight.
    pub method: &'static str,
    /// E.g. `/u/{token}/parts/{n}`.
    pub path: &'static str,
}

/// A router being built, and the list of what it serves.
#[derive(Debug)]
pub struct Routes<S> {
    router: Router<S>,
    served: Vec<Served>,
}

impl<S: Clone + Send + Sync + 'static> Default for Routes<S> {
    fn default() -> Self {
        Self {
            router: Router::new(),
            served: Vec::new(),
        }
    }
}

impl<S: Clone + Send + Sync + 'static> Routes<S> {
    /// No routes yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Serves `methods` (`"GET"`, `"GET, PUT"`: what `Allow` says) at
    /// `path` with `handler`; any other method is `405`.
    pub fn route(
        mut self,
        path: &'static str,
        methods: &'static str,
        handler: MethodRouter<S>,
    ) -> Self {
        self.router = self
            .router
            .route(path, handler.fallback(move || only(methods)));
        self.served.extend(methods.split(',').map(|m| Served {
            method: m.trim(),
            path,
        }));
        self
    }

    /// Lists `method` at `path`, a route added already, as served although
    /// it answers `405`: where a protocol wants that answer from the
    /// function itself (MCP's `GET` of a server that opens no stream),
    /// the deployment must route it there.
    pub fn refusing(mut self, path: &'static str, method: &'static str) -> Self {
        debug_assert!(self.served.iter().any(|s| s.path == path));
        self.served.push(Served { method, path });
        self
    }

    /// Adds `other`'s routes.
    pub fn merge(mut self, other: Routes<S>) -> Self {
        self.router = self.router.merge(other.router);
        self.served.extend(other.served);
        self
    }

    /// Puts every route so far behind `cors` (a CORS layer), so each also
    /// answers its preflight.
    pub fn cors<L>(mut self, cors: L) -> Self
    where
        L: Layer<Route> + Clone + Send + Sync + 'static,
        L::Service: Service<Request> + Clone + Send + Sync + 'static,
        <L::Service as Service<Request>>::Response: IntoResponse + 'static,
        <L::Service as Service<Request>>::Error: Into<Infallible> + 'static,
        <L::Service as Service<Request>>::Future: Send + 'static,
    {
        self = self.layer(cors);
        let paths: Vec<&'static str> = self.served.iter().map(|s| s.path).collect();
        for path in paths {
            let preflight = Served {
                method: "OPTIONS",
                path,
            };
            if !self.served.contains(&preflight) {
                self.served.push(preflight);
            }
        }
        self
    }

    /// Puts every route so far behind `layer` (outside any layer before
    /// it), serving nothing more.
    pub fn layer<L>(mut self, layer: L) -> Self
    where
        L: Layer<Route> + Clone + Send + Sync + 'static,
        L::Service: Service<Request> + Clone + Send + Sync + 'static,
        <L::Service as Service<Request>>::Response: IntoResponse + 'static,
        <L::Service as Service<Request>>::Error: Into<Infallible> + 'static,
        <L::Service as Service<Request>>::Future: Send + 'static,
    {
        self.router = self.router.layer(layer);
        self
    }

    /// What these routes serve, in the order they were added.
    pub fn served(&self) -> &[Served] {
        &self.served
    }

    /// The router, given its state.
    pub fn with_state(self, state: S) -> Router {
        self.router.with_state(state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use axum::routing::get;
    use tower::ServiceExt as _;

    #[tokio::test]
    async fn a_route_lists_its_methods_and_refuses_others_with_allow() {
        let routes = Routes::<()>::new().route(
            "/a/{x}",
            "GET, PUT",
            get(|| async { "got" }).put(|| async { "put" }),
        );
        assert_eq!(
            routes.served(),
            [
                Served {
                    method: "GET",
                    path: "/a/{x}"
                },
                Served {
                    method: "PUT",
                    path: "/a/{x}"
                }
            ]
        );
        let router = routes.with_state(());
        let post = Request::post("/a/1").body(Body::empty()).unwrap();
        let answer = router.oneshot(post).await.unwrap();
        assert_eq!(answer.status(), http::StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(answer.headers()[http::header::ALLOW], "GET, PUT");
    }

    #[test]
    fn routes_behind_cors_also_serve_their_preflight_once() {
        let cors = tower_http_free_cors();
        let routes = Routes::<()>::new()
            .route("/a", "GET, PUT", get(|| async { "" }).put(|| async { "" }))
            .cors(cors)
            .route("/b", "POST", axum::routing::post(|| async { "" }));
        let preflights: Vec<_> = routes
            .served()
            .iter()
            .filter(|s| s.method == "OPTIONS")
            .map(|s| s.path)
            .collect();
        assert_eq!(preflights, ["/a"]);
    }

    /// Any layer will do for the list: the identity.
    fn tower_http_free_cors() -> tower::layer::util::Identity {
        tower::layer::util::Identity::new()
    }
}

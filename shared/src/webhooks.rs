//! Delivering the outbox's events to the team's endpoints, as the Standard
//! Webhooks specification says: a POST of the event's JSON with
//! `webhook-id` (the event's id, the same on every retry: receivers dedupe
//! by it), `webhook-timestamp` (this attempt's, in seconds) and
//! `webhook-signature` (`v1,<base64 HMAC-SHA256 of id.timestamp.body>`, one
//! per secret while a secret rotates), signed by the `standardwebhooks`
//! crate.
//!
//! The worker runs beside the server, never in a request: a pass leases
//! the deliveries due ([`Outbox::due`]), sends a few at once, and ends each
//! one: a 2xx is delivered; a 4xx other than 408 and 429 says the receiver
//! will never take it (logged, not retried); anything else (no answer in
//! [`TIMEOUT`], 5xx, 408, 429) is tried again after the next step of the
//! schedule, and given up (logged) once the schedule is spent. Deliveries
//! live in the outbox, so a restart goes on where the last process stopped,
//! and a worker that died holding a lease has its deliveries tried again
//! once the lease ends.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use url::Url;

use crate::events::{Delivery, Event, EventType, Subscriber};
use crate::records::Outbox;
use crate::time::now_millis;

/// How long a receiver has to answer one delivery.
pub const TIMEOUT: Duration = Duration::from_secs(15);

/// The default schedule of retries after the first attempt, in seconds
/// (the specification's reference schedule: 5 s, 5 min, 30 min, 2 h, 5 h,
/// 10 h, 10 h; a day and a few hours in all).
pub const DEFAULT_SCHEDULE: [u64; 7] = [5, 300, 1_800, 7_200, 18_000, 36_000, 36_000];

/// How often the worker looks for deliveries due while none are (a backlog
/// is taken without waiting).
const POLL: Duration = Duration::from_millis(250);

/// Deliveries in flight at once.
const AT_ONCE: usize = 8;

/// One endpoint: where, signed with what, and which events it takes.
pub struct Endpoint {
    /// Its name in the outbox, the logs and the metrics: the name the
    /// endpoints file gives it, or [`Endpoint::name_of`] its URL.
    pub name: String,
    /// Where events are POSTed.
    pub url: Url,
    /// The secrets it is signed with: one, or, while one rotates, the new
    /// and the old (each signs, and the receiver accepts either).
    secrets: Vec<standardwebhooks::Webhook>,
    /// The types it takes; all when `None`.
    pub events: Option<Vec<EventType>>,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("name", &self.name)
            .field("url", &self.url.as_str())
            .field("secrets", &self.secrets.len())
            .field("events", &self.events)
            .finish()
    }
}

impl Endpoint {
    /// The name of an endpoint the configuration does not name: its host
    /// and a digest of its URL, stable across restarts and never the URL
    /// itself (a receiver's URL often carries its own secret).
    pub fn name_of(url: &Url) -> String {
        let digest = crate::sha::Sha256::of(url.as_str().as_bytes()).to_hex();
        format!("{}#{}", url.host_str().unwrap_or("endpoint"), &digest[..8])
    }

    /// An endpoint at `url` signing with each of `secrets` (`whsec_` and
    /// the base64 of 24 to 64 random bytes, as the specification has
    /// them); the words of what is wrong otherwise, never the secret.
    pub fn new(
        name: &str,
        url: Url,
        secrets: &[String],
        events: Option<Vec<EventType>>,
    ) -> Result<Self, String> {
        if secrets.is_empty() {
            return Err("has no secret".into());
        }
        // Signed events and their receiver's answers cross the network in
        // the clear over http: only to a receiver on this machine.
        if !crate::actions::upstream_url_allowed(&url) {
            return Err("must be an https URL (http only to a receiver on loopback)".into());
        }
        let secrets = secrets
            .iter()
            .map(|s| {
                use base64::Engine as _;
                let raw = s.strip_prefix("whsec_").ok_or(
                    "a secret must start with whsec_ (whsec_ and the base64 of 24 to 64 random bytes)",
                )?;
                let key = base64::engine::general_purpose::STANDARD
                    .decode(raw)
                    .map_err(|_| "a secret is not whsec_ and base64")?;
                if !(24..=64).contains(&key.len()) {
                    return Err("a secret must be 24 to 64 bytes (before base64)");
                }
                standardwebhooks::Webhook::new(s).map_err(|_| "a secret is not whsec_ and base64")
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            name: name.to_owned(),
            url,
            secrets,
            events,
        })
    }

    /// The endpoints a TOML file lists: `[[endpoint]]` tables of `url`,
    /// `secret` or `secrets` (new first while rotating), an optional
    /// `name` and optional `events` (`["file.ready", …]`).
    pub fn from_toml(text: &str) -> Result<Vec<Self>, String> {
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct File {
            endpoint: Vec<Entry>,
        }
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Entry {
            name: Option<String>,
            url: String,
            secret: Option<String>,
            #[serde(default)]
            secrets: Vec<String>,
            events: Option<Vec<String>>,
        }
        let file: File = toml::from_str(text).map_err(|e| e.message().to_owned())?;
        let mut names = std::collections::BTreeSet::new();
        file.endpoint
            .into_iter()
            .enumerate()
            .map(|(i, e)| {
                let at = |what: String| format!("endpoint {}: {what}", i + 1);
                let url = Url::parse(&e.url)
                    .ok()
                    .filter(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some())
                    .ok_or_else(|| at("url must be an http(s) URL".into()))?;
                let name = e.name.unwrap_or_else(|| Endpoint::name_of(&url));
                if !names.insert(name.clone()) {
                    return Err(at(format!("the name {name} is taken")));
                }
                let events = match e.events {
                    None => None,
                    Some(list) => Some(
                        list.iter()
                            .map(|n| {
                                EventType::parse(n)
                                    .ok_or_else(|| at(format!("{n} is not an event")))
                            })
                            .collect::<Result<Vec<_>, _>>()?,
                    ),
                };
                let secrets: Vec<String> = e.secret.into_iter().chain(e.secrets).collect();
                Self::new(&name, url, &secrets, events).map_err(|w| at(w.to_owned()))
            })
            .collect()
    }

    /// The `webhook-signature` of `body` for event `id` at `timestamp`.
    fn signature(&self, id: &str, timestamp: i64, body: &str) -> String {
        self.secrets
            .iter()
            .filter_map(|s| s.sign(id, timestamp, body.as_bytes()).ok())
            .collect::<Vec<_>>()
            .join(" ")
    }

    fn subscriber(&self) -> Subscriber {
        Subscriber {
            name: self.name.clone(),
            events: self.events.clone(),
        }
    }
}

/// How one attempt ended.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    /// Taken (2xx).
    Sent,
    /// Refused for good (a 4xx other than 408 and 429).
    Refused(u16),
    /// Worth trying again.
    Failed(String),
}

/// The worker's endpoints and schedule.
#[derive(Clone)]
pub struct Webhooks {
    endpoints: Arc<Vec<Endpoint>>,
    schedule: Vec<Duration>,
    client: Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>,
    /// What each body becomes as it is sent (a receipt signed into it).
    stamp: Option<Stamp>,
}

/// A body as it is sent, from the body the outbox keeps; an error (a
/// receipt whose key cannot be reached) holds the event back, to be tried
/// again.
pub type Stamp = Arc<
    dyn Fn(String) -> futures_util::future::BoxFuture<'static, Result<String, String>>
        + Send
        + Sync,
>;

impl std::fmt::Debug for Webhooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Webhooks")
            .field("endpoints", &self.endpoints)
            .field("schedule", &self.schedule)
            .field("stamped", &self.stamp.is_some())
            .finish_non_exhaustive()
    }
}

impl Webhooks {
    /// Delivers to `endpoints`, retrying after each step of `schedule`.
    pub fn new(endpoints: Vec<Endpoint>, schedule: Vec<Duration>) -> Self {
        Self {
            endpoints: Arc::new(endpoints),
            schedule,
            client: Client::builder(TokioExecutor::new())
                .build(crate::http_client::https_connector()),
            stamp: None,
        }
    }

    /// Sends each body as `stamp` makes it (the service signs a receipt
    /// of custody into the events of custody, [`crate::service::receipts`]).
    pub fn stamped(mut self, stamp: Stamp) -> Self {
        self.stamp = Some(stamp);
        self
    }

    /// `body` as it is sent, or why it cannot be sent yet.
    async fn sent_body(&self, body: String) -> Result<String, String> {
        match &self.stamp {
            Some(stamp) => stamp(body).await,
            None => Ok(body),
        }
    }

    /// Delivers what `outbox` holds, forever: each endpoint on its own, so
    /// one slow or down receiver holds back no other, with up to
    /// [`AT_ONCE`] of its deliveries in flight.
    pub async fn run(self, outbox: Arc<dyn Outbox>) {
        let names: Vec<String> = self.endpoints.iter().map(|e| e.name.clone()).collect();
        if let Err(e) = outbox.retain(&names).await {
            tracing::warn!(error = %e, "could not forget the endpoints no longer configured");
        }
        let mut each = tokio::task::JoinSet::new();
        for i in 0..self.endpoints.len() {
            let (this, outbox) = (self.clone(), outbox.clone());
            each.spawn(async move { this.run_endpoint(i, outbox).await });
        }
        while each.join_next().await.is_some() {}
    }

    /// Sends `event` once to every endpoint that takes its type, now: what
    /// the events function does with each change the table's stream
    /// carries (the stream is the outbox there, and Lambda retries it).
    /// An endpoint that refuses it for good (a 4xx other than 408 and 429)
    /// is logged and counted, as the worker does; any other failure is
    /// the error, so the caller has the change tried again (each endpoint
    /// then dedupes by `webhook-id`).
    pub async fn deliver_now(&self, event: &Event) -> Result<(), String> {
        let body = self.sent_body(event.body()).await?;
        for endpoint in self
            .endpoints
            .iter()
            .filter(|e| e.subscriber().takes(event.kind))
        {
            match self.send(endpoint, &event.id, &body).await {
                Outcome::Sent => crate::telemetry::delivery(&endpoint.name, "delivered"),
                Outcome::Refused(status) => refused(&endpoint.name, &event.id, status),
                Outcome::Failed(why) => {
                    crate::telemetry::delivery(&endpoint.name, "retried");
                    return Err(format!("{}: {why}", endpoint.name));
                }
            }
        }
        Ok(())
    }

    async fn run_endpoint(self, i: usize, outbox: Arc<dyn Outbox>) {
        let subscriber = self.endpoints[i].subscriber();
        let slots = Arc::new(tokio::sync::Semaphore::new(AT_ONCE));
        loop {
            // A slot first (waiting while every one is out), then as many
            // due deliveries as there are slots free: a backlog drains at
            // the receiver's pace; an empty outbox is looked at every POLL.
            let Ok(first) = slots.clone().acquire_owned().await else {
                return;
            };
            let free = slots.available_permits() + 1;
            let now = now_millis();
            let lease = now + (TIMEOUT.as_millis() as i64) * 2;
            let due = match outbox.due(&subscriber, now, lease, free).await {
                Ok(due) => due,
                Err(e) => {
                    tracing::warn!(error = %e, "webhooks: the outbox could not be read");
                    Vec::new()
                }
            };
            if due.is_empty() {
                drop(first);
                tokio::time::sleep(POLL).await;
                continue;
            }
            let mut first = Some(first);
            for d in due {
                let slot = match first.take() {
                    Some(slot) => slot,
                    None => match slots.clone().acquire_owned().await {
                        Ok(slot) => slot,
                        Err(_) => return,
                    },
                };
                let (this, outbox) = (self.clone(), outbox.clone());
                tokio::spawn(async move {
                    let outcome = match this.sent_body(d.body.clone()).await {
                        Ok(body) => this.send(&this.endpoints[i], &d.event_id, &body).await,
                        Err(why) => Outcome::Failed(why),
                    };
                    if let Err(e) = this.end(&*outbox, &d, outcome).await {
                        tracing::warn!(error = %e, event_id = %d.event_id, "webhooks: a delivery's state was not saved; it is sent again");
                    }
                    drop(slot);
                });
            }
        }
    }

    /// Records how `d` went.
    async fn end(
        &self,
        outbox: &dyn Outbox,
        d: &Delivery,
        outcome: Outcome,
    ) -> Result<(), crate::records::RecordError> {
        let attempts = d.attempts + 1;
        match outcome {
            Outcome::Sent => {
                tracing::debug!(endpoint = %d.endpoint, event_id = %d.event_id, attempts, "webhook delivered");
                crate::telemetry::delivery(&d.endpoint, "delivered");
                outbox.finish(d.seq, &d.endpoint).await
            }
            Outcome::Refused(status) => {
                refused(&d.endpoint, &d.event_id, status);
                outbox.finish(d.seq, &d.endpoint).await
            }
            Outcome::Failed(why) => match self.schedule.get(d.attempts as usize) {
                Some(wait) => {
                    tracing::info!(endpoint = %d.endpoint, event_id = %d.event_id, attempts, error = %why, retry_in_secs = wait.as_secs_f64(), "webhook not delivered; retrying");
                    crate::telemetry::delivery(&d.endpoint, "retried");
                    let next = now_millis() + wait.as_millis() as i64;
                    outbox.retry(d.seq, &d.endpoint, attempts, next).await
                }
                None => {
                    tracing::error!(endpoint = %d.endpoint, event_id = %d.event_id, attempts, error = %why, "webhook given up after its last retry");
                    crate::telemetry::delivery(&d.endpoint, "given_up");
                    outbox.finish(d.seq, &d.endpoint).await
                }
            },
        }
    }

    /// One attempt of event `event_id`, `body`, to `endpoint`.
    async fn send(&self, endpoint: &Endpoint, event_id: &str, body: &str) -> Outcome {
        let timestamp = crate::time::now_unix();
        let request = http::Request::post(endpoint.url.as_str())
            .header(http::header::CONTENT_TYPE, "application/json")
            .header(
                http::header::USER_AGENT,
                concat!("sluice/", env!("CARGO_PKG_VERSION")),
            )
            .header(standardwebhooks::HEADER_WEBHOOK_ID, event_id)
            .header(standardwebhooks::HEADER_WEBHOOK_TIMESTAMP, timestamp)
            .header(
                standardwebhooks::HEADER_WEBHOOK_SIGNATURE,
                endpoint.signature(event_id, timestamp, body),
            )
            .body(Full::new(Bytes::from(body.to_owned())));
        let request = match request {
            Ok(r) => r,
            Err(e) => return Outcome::Failed(e.to_string()),
        };
        match tokio::time::timeout(TIMEOUT, self.client.request(request)).await {
            Err(_) => Outcome::Failed(format!("no answer in {} s", TIMEOUT.as_secs())),
            Ok(Err(e)) => Outcome::Failed(e.to_string()),
            Ok(Ok(answer)) => outcome_of(answer.status().as_u16()),
        }
    }
}

/// A delivery the receiver refused for good: logged and counted, not
/// tried again.
fn refused(endpoint: &str, event_id: &str, status: u16) {
    tracing::warn!(
        endpoint,
        event_id,
        status,
        "webhook refused by its receiver; not retried"
    );
    crate::telemetry::delivery(endpoint, "dropped");
}

/// What a receiver's status means for the delivery.
fn outcome_of(status: u16) -> Outcome {
    match status {
        200..=299 => Outcome::Sent,
        408 | 429 => Outcome::Failed(format!("HTTP {status}")),
        400..=499 => Outcome::Refused(status),
        _ => Outcome::Failed(format!("HTTP {status}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Signed events go over https, or over http only to a receiver on
    /// this machine.
    #[test]
    fn an_endpoint_is_https_or_a_loopback_receiver() {
        let secret = [format!("whsec_{}", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")];
        let endpoint = |url: &str| Endpoint::new("e", Url::parse(url).unwrap(), &secret, None);
        for fine in [
            "https://backend.example/hooks",
            "http://127.0.0.1:8080/hooks",
            "http://localhost/hooks",
            "http://[::1]:9/hooks",
        ] {
            assert!(endpoint(fine).is_ok(), "{fine}");
        }
        for refused in [
            "http://backend.example/hooks",
            "http://10.0.0.2/hooks",
            "ftp://x/y",
        ] {
            let why = endpoint(refused).err().unwrap();
            assert!(why.contains("https"), "{refused}: {why}");
        }
    }

    const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

    /// An event whose receipt cannot be signed (its key out of reach) is
    /// not sent without it: the delivery fails, to be tried again.
    #[tokio::test]
    async fn an_event_whose_receipt_is_pending_is_held_back() {
        let receiver = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        receiver.set_nonblocking(true).unwrap();
        let url = Url::parse(&format!("http://{}/hook", receiver.local_addr().unwrap())).unwrap();
        let endpoint = Endpoint::new("e", url, &[SECRET.into()], None).unwrap();
        let file = crate::file::FileMeta {
            id: crate::file::FileId::random(),
            owner: "alice".into(),
            filename: "a.pdf".into(),
            content_type: "application/pdf".into(),
            size: 1,
            sha256: crate::sha::Sha256::of(b"x"),
        };
        let event = Event::about(crate::events::EventType::Ready, &file, None);
        let held = Webhooks::new(vec![endpoint], Vec::new()).stamped(Arc::new(|_body| {
            Box::pin(async { Err("the receipt is pending: KMS did not answer".to_owned()) })
        }));
        let why = held.deliver_now(&event).await.unwrap_err();
        assert!(why.contains("pending"), "{why}");
        assert!(receiver.accept().is_err(), "nothing was sent");
    }

    #[test]
    fn statuses_decide_retry_or_stop() {
        assert_eq!(outcome_of(200), Outcome::Sent);
        assert_eq!(outcome_of(204), Outcome::Sent);
        assert_eq!(outcome_of(410), Outcome::Refused(410));
        assert_eq!(outcome_of(400), Outcome::Refused(400));
        for retried in [408, 429, 500, 503, 301] {
            assert!(
                matches!(outcome_of(retried), Outcome::Failed(_)),
                "{retried}"
            );
        }
    }

    #[test]
    fn a_signature_verifies_with_each_secret_while_one_rotates() {
        let url = Url::parse("http://127.0.0.1:9/hook").unwrap();
        let new = "whsec_QUJDREVGR0hJSktMTU5PUFFSU1RVVldY";
        let e = Endpoint::new("a", url, &[new.into(), SECRET.into()], None).unwrap();
        let ts = crate::time::now_unix();
        let body = r#"{"type":"file.ready"}"#;
        let sig = e.signature("evt_1", ts, body);
        assert_eq!(sig.split(' ').count(), 2, "{sig}");
        for secret in [new, SECRET] {
            let mut headers = http::HeaderMap::new();
            headers.insert("webhook-id", "evt_1".parse().unwrap());
            headers.insert("webhook-timestamp", ts.to_string().parse().unwrap());
            headers.insert("webhook-signature", sig.parse().unwrap());
            standardwebhooks::Webhook::new(secret)
                .unwrap()
                .verify(body.as_bytes(), &headers)
                .unwrap();
        }
    }

    #[test]
    fn bad_secrets_and_files_are_refused_in_words() {
        let url = || Url::parse("http://127.0.0.1:9/").unwrap();
        for bad in ["MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_!!", "whsec_YWJj"] {
            let e = Endpoint::new("a", url(), &[bad.into()], None).unwrap_err();
            assert!(e.contains("secret") && !e.contains(bad), "{e}");
        }
        assert!(Endpoint::new("a", url(), &[], None).is_err());
        let file = format!(
            "[[endpoint]]\nurl = \"http://127.0.0.1:9/a\"\nsecret = \"{SECRET}\"\n\
             [[endpoint]]\nname = \"b\"\nurl = \"http://127.0.0.1:9/b\"\nsecrets = [\"{SECRET}\"]\nevents = [\"file.ready\"]\n"
        );
        let endpoints = Endpoint::from_toml(&file).unwrap();
        assert_eq!(endpoints.len(), 2);
        assert!(
            endpoints[0].name.starts_with("127.0.0.1#"),
            "{}",
            endpoints[0].name
        );
        assert!(!endpoints[0].name.contains("/a"), "{}", endpoints[0].name);
        assert_eq!(endpoints[1].events, Some(vec![EventType::Ready]));
        let wrong = file.replace("file.ready", "file.readied");
        let e = Endpoint::from_toml(&wrong).unwrap_err();
        assert!(
            e.contains("endpoint 2") && e.contains("file.readied"),
            "{e}"
        );
        let e = Endpoint::from_toml(
            &file.replace("name = \"b\"", &format!("name = \"{}\"", endpoints[0].name)),
        )
        .unwrap_err();
        assert!(e.contains("taken"), "{e}");
    }
}

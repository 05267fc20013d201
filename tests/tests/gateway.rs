//! What stands in front of the functions when deployed, emulated on
//! loopback: an HTTP front that turns each request into an API Gateway HTTP
//! API (payload format 2.0) event, hands it to a long-running function
//! process through an emulated Lambda runtime API, and turns the answer back
//! into HTTP. Two topologies: API Gateway's routes (template.yaml), with its
//! renaming of `WWW-Authenticate` to `x-amzn-remapped-www-authenticate`
//! (documented for REST APIs, reported for HTTP APIs) and, optionally, the
//! template's response mapping that restores it. (`cargo lambda watch` is
//! not emulated: `tests/tests/cargo_lambda_watch/` runs the real one.)

use std::collections::HashMap;
use std::io::{BufReader, Write as _};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use serde_json::{Map, Value, json};

/// One request read off a socket.
pub struct HttpRequest {
    pub method: String,
    pub target: String,
    /// Names lowercased, in order.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// Reads one HTTP/1.1 request (bodies by `Content-Length`); `None` at EOF.
pub fn read_request(reader: &mut impl std::io::BufRead) -> Option<HttpRequest> {
    let mut start = String::new();
    if reader.read_line(&mut start).ok()? == 0 {
        return None;
    }
    let mut parts = start.split_whitespace();
    let (method, target) = (parts.next()?.to_owned(), parts.next()?.to_owned());
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).ok()?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (k, v) = line.split_once(':')?;
        headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
    }
    let length = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0usize);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(HttpRequest {
        method,
        target,
        headers,
        body,
    })
}

fn write_response(
    stream: &mut TcpStream,
    status: u16,
    headers: &[(String, String)],
    body: &[u8],
    close: bool,
) {
    let mut head = format!("HTTP/1.1 {status} X\r\n");
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str(&format!(
        "Content-Length: {}\r\nConnection: {}\r\n\r\n",
        body.len(),
        if close { "close" } else { "keep-alive" }
    ));
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(body);
}

struct Invocation {
    event: Value,
    reply: mpsc::Sender<Value>,
}

/// A function process under an emulated Lambda runtime API, answering one
/// invocation at a time (as one Lambda instance does).
pub struct LambdaFunction {
    child: Mutex<Child>,
    invocations: mpsc::Sender<Invocation>,
    queue: Arc<Mutex<()>>,
}

impl LambdaFunction {
    /// Starts `function` (`mcp`, `issuer` or `resolver`) with `env`.
    pub fn start(function: &str, env: &[(&str, String)]) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let (invocations, pending) = mpsc::channel::<Invocation>();
        std::thread::spawn(move || {
            let mut waiting: HashMap<String, mpsc::Sender<Value>> = HashMap::new();
            let mut next_id = 0u64;
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let Some(request) = read_request(&mut BufReader::new(stream.try_clone().unwrap()))
                else {
                    continue;
                };
                if request.target.ends_with("/invocation/next") {
                    // Long poll: the function waits here for its next event.
                    let Ok(invocation) = pending.recv() else {
                        return;
                    };
                    next_id += 1;
                    let id = format!("req-{next_id}");
                    waiting.insert(id.clone(), invocation.reply);
                    let deadline = (sluice::time::now_unix() + 60) * 1000;
                    write_response(
                        &mut stream,
                        200,
                        &[
                            ("Content-Type".into(), "application/json".into()),
                            ("Lambda-Runtime-Aws-Request-Id".into(), id),
                            ("Lambda-Runtime-Deadline-Ms".into(), deadline.to_string()),
                            (
                                "Lambda-Runtime-Invoked-Function-Arn".into(),
                                "arn:aws:lambda:us-east-1:000000000000:function:sluice".into(),
                            ),
                        ],
                        invocation.event.to_string().as_bytes(),
                        true,
                    );
                } else {
                    let id = request
                        .target
                        .split('/')
                        .rev()
                        .nth(1)
                        .unwrap_or_default()
                        .to_owned();
                    write_response(&mut stream, 202, &[], b"{}", true);
                    if let Some(reply) = waiting.remove(&id) {
                        let answer = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
                        let _ = reply.send(answer);
                    }
                }
            }
        });
        let child = Command::new(env!("CARGO_BIN_EXE_sluice-function-under-test"))
            .arg(function)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("AWS_LAMBDA_RUNTIME_API", &addr)
            .env("AWS_LAMBDA_FUNCTION_NAME", function)
            .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256")
            .env("AWS_LAMBDA_FUNCTION_VERSION", "1")
            .env("SLUICE_LOG", "warn")
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        Self {
            child: Mutex::new(child),
            invocations,
            queue: Arc::new(Mutex::new(())),
        }
    }

    /// Invokes the function with `event` and returns what it answered.
    pub fn invoke(&self, event: Value) -> Value {
        let _one_at_a_time = self.queue.lock().unwrap();
        let (reply, answer) = mpsc::channel();
        self.invocations.send(Invocation { event, reply }).unwrap();
        answer
            .recv_timeout(Duration::from_secs(60))
            .expect("the function answered")
    }
}

impl LambdaFunction {
    /// Stops the process.
    pub fn stop(&self) {
        if let Ok(mut child) = self.child.lock() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for LambdaFunction {
    fn drop(&mut self) {
        self.stop();
    }
}

/// An API Gateway HTTP API (payload format 2.0) event.
pub fn event(
    method: &str,
    path: &str,
    query: &str,
    headers: &[(String, String)],
    body: &[u8],
    host: &str,
) -> Value {
    let mut map = Map::new();
    for (k, v) in headers {
        map.entry(k.clone())
            .and_modify(|old| *old = json!(format!("{},{v}", old.as_str().unwrap_or_default())))
            .or_insert(json!(v));
    }
    let (body, base64) = match std::str::from_utf8(body) {
        Ok(text) => (text.to_owned(), false),
        Err(_) => (base64::engine::general_purpose::STANDARD.encode(body), true),
    };
    let domain = host.split(':').next().unwrap_or(host);
    json!({
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": query,
        "headers": map,
        "requestContext": {
            "accountId": "000000000000", "apiId": "api", "domainName": domain,
            "domainPrefix": domain.split('.').next().unwrap_or(domain), "requestId": "r",
            "routeKey": "$default", "stage": "$default",
            "time": "30/Nov/2026:00:00:00 +0000", "timeEpoch": 0,
            "http": {"method": method, "path": path, "protocol": "HTTP/1.1", "sourceIp": "127.0.0.1", "userAgent": "test"}
        },
        "body": if body.is_empty() { Value::Null } else { json!(body) },
        "isBase64Encoded": base64
    })
}

/// How requests reach the functions.
#[derive(Debug, Clone, Copy)]
pub enum Topology {
    /// API Gateway's routes. It renames a function's `WWW-Authenticate`;
    /// with `restore`, the template's response mapping puts it back.
    ApiGateway { restore: bool },
}

/// The front, and the three functions behind it; all stopped on drop.
pub struct Gateway {
    /// Its base URL, e.g. `http://127.0.0.1:40123`.
    pub base: String,
    functions: Arc<HashMap<&'static str, LambdaFunction>>,
}

impl Drop for Gateway {
    /// The serving thread holds the functions too: stop them here.
    fn drop(&mut self) {
        self.functions.values().for_each(LambdaFunction::stop);
    }
}

/// API Gateway's routes (template.yaml): which function answers.
fn route(method: &str, path: &str) -> Option<&'static str> {
    static ROUTES: std::sync::OnceLock<Vec<crate::template::ApiRoute>> = std::sync::OnceLock::new();
    let routes = ROUTES.get_or_init(crate::template::api_routes);
    let function = &crate::template::api_route(routes, method, path)?.function;
    ["mcp", "issuer", "resolver"]
        .into_iter()
        .find(|f| function.strip_prefix("sluice-") == Some(f))
}

impl Gateway {
    /// Binds a port, then starts the three functions with `env(base)` (the
    /// environment, given the gateway's own base URL).
    pub fn start(topology: Topology, env: impl Fn(&str) -> Vec<(&'static str, String)>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let env = env(&base);
        let functions: Arc<HashMap<&'static str, LambdaFunction>> = Arc::new(
            ["mcp", "issuer", "resolver"]
                .into_iter()
                .map(|f| (f, LambdaFunction::start(f, &env)))
                .collect(),
        );
        let serving = functions.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let functions = serving.clone();
                std::thread::spawn(move || serve_connection(stream, topology, &functions));
            }
        });
        Self { base, functions }
    }
}

fn serve_connection(
    mut stream: TcpStream,
    topology: Topology,
    functions: &HashMap<&'static str, LambdaFunction>,
) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    while let Some(request) = read_request(&mut reader) {
        let (path, query) = request
            .target
            .split_once('?')
            .unwrap_or((request.target.as_str(), ""));
        let target = match topology {
            Topology::ApiGateway { .. } => {
                route(&request.method, path).map(|f| (f, path.to_owned()))
            }
        };
        let Some((function, path)) = target else {
            write_response(
                &mut stream,
                404,
                &[("Content-Type".into(), "application/json".into())],
                br#"{"message":"Not Found"}"#,
                false,
            );
            continue;
        };
        let host = request
            .headers
            .iter()
            .find(|(k, _)| k == "host")
            .map(|(_, v)| v.clone())
            .unwrap_or_default();
        let answer = functions[function].invoke(event(
            &request.method,
            &path,
            query,
            &request.headers,
            &request.body,
            &host,
        ));
        let status = answer["statusCode"].as_u64().unwrap_or(502) as u16;
        let body = match (answer["body"].as_str(), answer["isBase64Encoded"].as_bool()) {
            (Some(b), Some(true)) => base64::engine::general_purpose::STANDARD
                .decode(b)
                .unwrap_or_default(),
            (Some(b), _) => b.as_bytes().to_vec(),
            (None, _) => Vec::new(),
        };
        let mut headers: Vec<(String, String)> = answer["headers"]
            .as_object()
            .map(|h| {
                h.iter()
                    .map(|(k, v)| {
                        (
                            k.to_ascii_lowercase(),
                            v.as_str().unwrap_or_default().to_owned(),
                        )
                    })
                    .filter(|(k, _)| k != "content-length" && k != "connection")
                    .collect()
            })
            .unwrap_or_default();
        let Topology::ApiGateway { restore } = topology;
        for header in &mut headers {
            if header.0 == "www-authenticate" {
                header.0 = "x-amzn-remapped-www-authenticate".into();
            }
        }
        // The template's own response mapping, as it is written there:
        // on the mcp function's integration.
        if restore && function == "mcp" {
            let json = serde_json::from_slice::<Value>(&body).unwrap_or(Value::Null);
            for (on, header, field) in crate::template::mcp_response_mappings() {
                if on == status
                    && let Some(value) = json[&field].as_str()
                {
                    headers.retain(|(k, _)| !k.eq_ignore_ascii_case(&header));
                    headers.push((header.to_ascii_lowercase(), value.to_owned()));
                }
            }
        }
        write_response(&mut stream, status, &headers, &body, false);
    }
}

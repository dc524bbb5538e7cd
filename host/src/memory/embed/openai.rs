//! A remote OpenAI-compatible `/embeddings` endpoint.

use std::time::Duration;

use reqwest::blocking::Client;
use serde::{Deserialize, Serialize};

use super::{EmbedError, Embedder, OpenAiEmbedConfig, Role, l2_normalize};
use crate::secret::Secret;

/// Longest wait for the TCP/TLS connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Longest wait for a whole request, so a stuck provider cannot hang a lane.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Characters of an error reply quoted in the error message.
const ERROR_BODY_CHARS: usize = 300;

/// Embeds through `POST {base_url}/embeddings` (OpenAI or a compatible server).
///
/// Blocking, with bounded timeouts; vectors are re-normalized locally, since providers
/// and `dimensions` truncation do not all promise unit length.
pub struct OpenAiEmbedder {
    client: Client,
    url: String,
    api_key: Option<Secret>,
    model: String,
    dims: usize,
}

#[derive(Serialize)]
struct Request<'a> {
    model: &'a str,
    input: Vec<&'a str>,
    dimensions: usize,
}

#[derive(Deserialize)]
struct Response {
    data: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    index: usize,
    embedding: Vec<f32>,
}

impl OpenAiEmbedder {
    /// A client for `cfg`'s endpoint; sends no request until [`Embedder::embed`].
    pub fn new(cfg: &OpenAiEmbedConfig) -> Result<Self, EmbedError> {
        let builder = Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(REQUEST_TIMEOUT);
        // reqwest's blocking client refuses to be built on an async runtime thread, and
        // start-up code may well run on one: build it on a plain thread.
        let client = std::thread::scope(|s| s.spawn(|| builder.build()).join())
            .map_err(|_| EmbedError::Remote("building the HTTP client panicked".to_owned()))?
            .map_err(|e| EmbedError::Remote(format!("building the HTTP client: {e}")))?;
        Ok(Self {
            client,
            url: format!("{}/embeddings", cfg.base_url.trim_end_matches('/')),
            api_key: cfg.api_key.clone(),
            model: cfg.model.clone(),
            dims: cfg.dims,
        })
    }

    /// Checks the reply has one `dims`-long vector per input and returns them in input order.
    fn vectors(&self, mut data: Vec<Item>, inputs: usize) -> Result<Vec<Vec<f32>>, EmbedError> {
        data.sort_by_key(|item| item.index);
        let complete = data.len() == inputs && data.iter().enumerate().all(|(i, d)| d.index == i);
        if !complete {
            return Err(EmbedError::Remote(format!(
                "expected embeddings for indexes 0..{inputs}, got {} items",
                data.len()
            )));
        }
        data.into_iter()
            .map(|item| {
                let mut v = item.embedding;
                if v.len() != self.dims {
                    let msg = format!("expected {} dimensions, got {}", self.dims, v.len());
                    return Err(EmbedError::Remote(msg));
                }
                l2_normalize(&mut v);
                Ok(v)
            })
            .collect()
    }
}

impl Embedder for OpenAiEmbedder {
    fn name(&self) -> &str {
        &self.model
    }

    fn dims(&self) -> usize {
        self.dims
    }

    /// Symmetric: a query and a stored text embed alike.
    fn embed(&self, _role: Role, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        // The API rejects empty strings; a blank embeds as near-empty text would.
        let input = texts
            .iter()
            .map(|t| if t.is_empty() { " " } else { t })
            .collect();
        let body = Request {
            model: &self.model,
            input,
            dimensions: self.dims,
        };
        let mut request = self.client.post(&self.url).json(&body);
        if let Some(key) = &self.api_key {
            request = request.bearer_auth(key.expose());
        }
        let remote = |e: reqwest::Error| EmbedError::Remote(format!("POST {}: {e}", self.url));
        let response = request.send().map_err(remote)?;
        let status = response.status();
        if !status.is_success() {
            let text = response.text().unwrap_or_default();
            let excerpt: String = text.chars().take(ERROR_BODY_CHARS).collect();
            return Err(EmbedError::Remote(format!(
                "POST {}: {status}: {excerpt}",
                self.url
            )));
        }
        let parsed: Response = response.json().map_err(remote)?;
        self.vectors(parsed.data, texts.len())
    }
}

#[cfg(test)]
mod tests {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::TcpListener;
    use std::thread::JoinHandle;

    use super::*;

    /// Serves one HTTP request with `status` and `body`; the thread returns what it received.
    fn serve_once(status: &'static str, body: String) -> (String, JoinHandle<String>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
        let server = std::thread::spawn(move || {
            let (stream, _) = listener.accept().unwrap();
            let mut reader = BufReader::new(stream);
            let mut head = String::new();
            while !head.ends_with("\r\n\r\n") {
                assert!(
                    reader.read_line(&mut head).unwrap() > 0,
                    "connection closed early"
                );
            }
            let length = head
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().parse::<usize>().unwrap())
                })
                .unwrap_or(0);
            let mut request_body = vec![0; length];
            reader.read_exact(&mut request_body).unwrap();
            let reply = format!(
                "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            reader.get_mut().write_all(reply.as_bytes()).unwrap();
            head + &String::from_utf8(request_body).unwrap()
        });
        (base_url, server)
    }

    fn embedder(base_url: String, dims: usize) -> OpenAiEmbedder {
        OpenAiEmbedder::new(&OpenAiEmbedConfig {
            base_url,
            api_key: Some("sk-test".into()),
            model: "text-embedding-3-small".to_owned(),
            dims,
        })
        .unwrap()
    }

    #[test]
    fn posts_to_embeddings_and_returns_normalized_vectors_in_index_order() {
        let canned = r#"{"object":"list","data":[
            {"object":"embedding","index":1,"embedding":[0.0,0.0,2.0]},
            {"object":"embedding","index":0,"embedding":[3.0,4.0,0.0]}],
            "model":"text-embedding-3-small","usage":{"prompt_tokens":4,"total_tokens":4}}"#;
        let (base_url, server) = serve_once("200 OK", canned.to_owned());
        let vecs = embedder(base_url, 3)
            .embed(Role::Passage, &["first", "second"])
            .unwrap();
        assert_eq!(vecs, vec![vec![0.6, 0.8, 0.0], vec![0.0, 0.0, 1.0]]);

        let request = server.join().unwrap();
        assert!(
            request.starts_with("POST /v1/embeddings HTTP/1.1\r\n"),
            "{request}"
        );
        assert!(
            request
                .to_ascii_lowercase()
                .contains("authorization: bearer sk-test\r\n"),
            "{request}"
        );
        let body: serde_json::Value =
            serde_json::from_str(request.split("\r\n\r\n").nth(1).unwrap()).unwrap();
        assert_eq!(
            body,
            serde_json::json!({"model": "text-embedding-3-small", "input": ["first", "second"], "dimensions": 3})
        );
    }

    #[test]
    fn error_status_and_wrong_dims_are_remote_errors() {
        let (base_url, server) = serve_once(
            "401 Unauthorized",
            r#"{"error":{"message":"Incorrect API key provided"}}"#.to_owned(),
        );
        let err = embedder(base_url, 3)
            .embed(Role::Passage, &["x"])
            .unwrap_err();
        assert!(matches!(err, EmbedError::Remote(_)), "{err}");
        assert!(
            err.to_string().contains("401") && err.to_string().contains("Incorrect API key"),
            "{err}"
        );
        server.join().unwrap();

        let canned = r#"{"data":[{"index":0,"embedding":[1.0,2.0]}]}"#;
        let (base_url, server) = serve_once("200 OK", canned.to_owned());
        let err = embedder(base_url, 3)
            .embed(Role::Passage, &["x"])
            .unwrap_err();
        assert!(
            err.to_string().contains("expected 3 dimensions, got 2"),
            "{err}"
        );
        server.join().unwrap();
    }
}

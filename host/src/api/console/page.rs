//! The console page: `GET /console` (and `/console/`) and its assets at `/console/{file}`,
//! compiled into the binary from `src/console/assets/` (one binary, nothing fetched from
//! another host). Every answer carries a Content-Security-Policy of `default-src 'self'`,
//! so the page can load and call nothing but this server — no inline script, no CDN.
//! These routes are HTML, CSS and JavaScript, not the JSON API: they stay out of the
//! OpenAPI document.

use axum::{
    extract::Path,
    http::{HeaderValue, header},
    response::{IntoResponse, Response},
};
use rust_embed::RustEmbed;

/// The page's files.
#[derive(RustEmbed)]
#[folder = "src/console/assets/"]
struct Assets;

/// What the page may load and where it may be shown: this server only, never in a frame.
const CSP: &str = "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

/// The page.
pub async fn index() -> Response {
    asset("index.html")
}

/// One asset of the page.
pub async fn file(Path(file): Path<String>) -> Response {
    asset(&file)
}

fn asset(name: &str) -> Response {
    let Some(found) = Assets::get(name) else {
        return super::super::not_found().into_response();
    };
    let content_type = HeaderValue::from_str(found.metadata.mimetype())
        .unwrap_or(HeaderValue::from_static("application/octet-stream"));
    (
        [
            (header::CONTENT_TYPE, content_type),
            (
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(CSP),
            ),
            (
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            ),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        ],
        super::super::asset_body(found.data),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn get(name: &str) -> (u16, String, String, String) {
        let response = asset(name);
        let header = |h: header::HeaderName| {
            response
                .headers()
                .get(h)
                .map(|v: &HeaderValue| v.to_str().unwrap().to_string())
                .unwrap_or_default()
        };
        let (content_type, csp) = (
            header(header::CONTENT_TYPE),
            header(header::CONTENT_SECURITY_POLICY),
        );
        let status = response.status().as_u16();
        let body = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        (
            status,
            content_type,
            csp,
            String::from_utf8_lossy(&body).into_owned(),
        )
    }

    /// Every embedded file is served with its type and the policy, and names no other host.
    #[tokio::test]
    async fn assets_are_typed_confined_and_local() {
        let names: Vec<String> = Assets::iter().map(|n| n.into_owned()).collect();
        assert!(names.iter().any(|n| n == "index.html"), "{names:?}");
        for name in &names {
            let (status, content_type, csp, body) = get(name).await;
            assert_eq!(status, 200, "{name}");
            assert!(csp.starts_with("default-src 'self'"), "{name}: {csp}");
            let expected = match name.rsplit('.').next() {
                Some("html") => "text/html",
                Some("js") => "text/javascript",
                Some("mjs") => "text/javascript",
                Some("css") => "text/css",
                _ => "",
            };
            assert!(content_type.starts_with(expected), "{name}: {content_type}");
            assert!(
                !body.contains("http://") && !body.contains("https://"),
                "{name} names another host"
            );
        }
        assert_eq!(get("nope.js").await.0, 404);
        assert_eq!(get("../Cargo.toml").await.0, 404);
    }
}

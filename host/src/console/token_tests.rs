//! Token checking against real keys generated here: the server's own ES256 key, and a
//! provider whose JWKS (a file) holds one RS256 and one ES256 key.

use std::{sync::OnceLock, time::Duration};

use aws_lc_rs::{
    encoding::AsDer,
    rsa::{KeyPair as RsaKeyPair, KeySize},
    signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair},
};
use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use jsonwebtoken::{Algorithm, EncodingKey, Header, jwk::Jwk};
use serde_json::{Value, json};

use super::*;
use crate::{
    clock::now_ms,
    console::{
        config::{KeySource, Provider},
        own_key::OwnKey,
        provider::ProviderKeys,
    },
};

const IDP: &str = "https://idp.example";
const AUD: &str = "wasmind-console-client";

/// A provider signing key: (kid, algorithm, private key).
struct Signer {
    kid: &'static str,
    alg: Algorithm,
    key: EncodingKey,
}

fn rsa_key() -> EncodingKey {
    static PEM: OnceLock<String> = OnceLock::new();
    let pem = PEM.get_or_init(|| {
        let pair = RsaKeyPair::generate(KeySize::Rsa2048).unwrap();
        let der: aws_lc_rs::encoding::Pkcs8V1Der = pair.as_der().unwrap();
        pem::encode(&pem::Pem::new("PRIVATE KEY", der.as_ref().to_vec()))
    });
    EncodingKey::from_rsa_pem(pem.as_bytes()).unwrap()
}

fn ec_key() -> EncodingKey {
    let pair = EcdsaKeyPair::generate(&ECDSA_P256_SHA256_FIXED_SIGNING).unwrap();
    EncodingKey::from_ec_der(pair.to_pkcs8v1().unwrap().as_ref())
}

fn jwk(signer: &Signer) -> Value {
    let mut jwk =
        serde_json::to_value(Jwk::from_encoding_key(&signer.key, signer.alg).unwrap()).unwrap();
    jwk["kid"] = json!(signer.kid);
    jwk
}

struct Fixture {
    dir: tempfile::TempDir,
    verifier: Verifier,
    own_issuer: String,
    own: OwnKey,
    rsa: Signer,
    ec: Signer,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let rsa = Signer {
        kid: "rsa-1",
        alg: Algorithm::RS256,
        key: rsa_key(),
    };
    let ec = Signer {
        kid: "ec-1",
        alg: Algorithm::ES256,
        key: ec_key(),
    };
    let jwks = dir.path().join("jwks.json");
    std::fs::write(&jwks, json!({ "keys": [jwk(&rsa), jwk(&ec)] }).to_string()).unwrap();
    let provider = ProviderKeys::new(Provider {
        issuer: IDP.into(),
        audience: AUD.into(),
        keys: KeySource::File(jwks),
        account_claim: "tenant".into(),
    })
    .unwrap();
    let own = OwnKey::load_or_create(&dir.path().join("data")).unwrap();
    let verifier = Verifier::new(
        OwnKey::load_or_create(&dir.path().join("data")).unwrap(),
        Some(provider),
    );
    Fixture {
        own_issuer: own.issuer().to_string(),
        dir,
        verifier,
        own,
        rsa,
        ec,
    }
}

impl Fixture {
    /// The server's own key again (it is read from the same data dir).
    fn own_key_copy(&self) -> OwnKey {
        OwnKey::load_or_create(&self.dir.path().join("data")).unwrap()
    }
}

fn now() -> u64 {
    now_ms() / 1_000
}

/// Good provider claims for account `acme`.
fn claims() -> Value {
    json!({ "iss": IDP, "aud": AUD, "sub": "alice", "exp": now() + 600, "tenant": "acme" })
}

fn sign(signer: &Signer, claims: &Value) -> String {
    let mut header = Header::new(signer.alg);
    header.kid = Some(signer.kid.into());
    jsonwebtoken::encode(&header, claims, &signer.key).unwrap()
}

fn verify(f: &Fixture, token: &str) -> Result<Claims, TokenError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f.verifier.verify(token))
}

#[test]
fn good_rs256_and_es256_tokens_sign_in() {
    let f = fixture();
    for signer in [&f.rsa, &f.ec] {
        let c = verify(&f, &sign(signer, &claims())).unwrap();
        assert_eq!((c.account.as_str(), c.subject.as_str()), ("acme", "alice"));
        assert!(c.expires_at > now());
    }
    // Without a kid, the first key of the token's kind checks it.
    let token = jsonwebtoken::encode(&Header::new(Algorithm::ES256), &claims(), &f.ec.key).unwrap();
    assert_eq!(verify(&f, &token).unwrap().account, "acme");
}

#[test]
fn the_servers_own_tokens_sign_in() {
    let f = fixture();
    let token = f.own.sign("acme", Duration::from_secs(900)).unwrap();
    let c = verify(&f, &token).unwrap();
    assert_eq!(
        (c.account.as_str(), c.subject.as_str()),
        ("acme", "operator")
    );
    assert!(f.own_issuer.starts_with("wasmind:"));
}

#[test]
fn expired_tokens_are_refused_past_the_leeway() {
    let f = fixture();
    let mut c = claims();
    c["exp"] = json!(now() - LEEWAY_SECS - 10);
    assert_eq!(verify(&f, &sign(&f.rsa, &c)), Err(TokenError::Expired));
    // Within the leeway the clock skew is forgiven.
    c["exp"] = json!(now() - 5);
    assert!(verify(&f, &sign(&f.rsa, &c)).is_ok());
    let expired_own = f.own.sign("acme", Duration::ZERO).unwrap();
    assert!(verify(&f, &expired_own).is_ok(), "within the leeway");
    c["exp"] = json!(now() + 600);
    c["nbf"] = json!(now() + 3_600);
    assert_eq!(verify(&f, &sign(&f.ec, &c)), Err(TokenError::NotYetValid));
}

#[test]
fn wrong_issuer_or_audience_is_refused() {
    let f = fixture();
    let mut c = claims();
    c["iss"] = json!("https://evil.example");
    assert_eq!(
        verify(&f, &sign(&f.rsa, &c)),
        Err(TokenError::UntrustedIssuer("https://evil.example".into()))
    );
    let mut c = claims();
    c["aud"] = json!("someone-else");
    assert_eq!(verify(&f, &sign(&f.ec, &c)), Err(TokenError::WrongAudience));
    // A provider token cannot pose as the server's own (other key, other audience).
    let mut c = claims();
    c["iss"] = json!(f.own_issuer);
    c["aud"] = json!("wasmind-console");
    c["wasmind_account"] = json!("acme");
    assert_eq!(verify(&f, &sign(&f.ec, &c)), Err(TokenError::BadSignature));
}

#[test]
fn a_bad_signature_is_refused() {
    let f = fixture();
    let impostor = Signer {
        kid: "ec-1",
        alg: Algorithm::ES256,
        key: ec_key(),
    };
    assert_eq!(
        verify(&f, &sign(&impostor, &claims())),
        Err(TokenError::BadSignature)
    );
    // A payload changed after signing.
    let token = sign(&f.rsa, &claims());
    let parts: Vec<&str> = token.split('.').collect();
    let mut forged = claims();
    forged["tenant"] = json!("victim");
    let payload = URL_SAFE_NO_PAD.encode(forged.to_string());
    let tampered = format!("{}.{payload}.{}", parts[0], parts[2]);
    assert_eq!(verify(&f, &tampered), Err(TokenError::BadSignature));
    let unknown_kid = Signer {
        kid: "rsa-9",
        alg: Algorithm::RS256,
        key: rsa_key(),
    };
    assert_eq!(
        verify(&f, &sign(&unknown_kid, &claims())),
        Err(TokenError::UnknownKey)
    );
}

#[test]
fn alg_none_and_other_algorithms_are_refused() {
    let f = fixture();
    let header = URL_SAFE_NO_PAD.encode(r#"{"alg":"none","typ":"JWT"}"#);
    let payload = URL_SAFE_NO_PAD.encode(claims().to_string());
    let none = format!("{header}.{payload}.");
    assert!(
        matches!(verify(&f, &none), Err(TokenError::Malformed(_))),
        "{:?}",
        verify(&f, &none)
    );
    // HS256 with a guessable secret: the algorithm alone refuses it.
    let hs = jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &claims(),
        &EncodingKey::from_secret(b"secret"),
    )
    .unwrap();
    assert_eq!(verify(&f, &hs), Err(TokenError::Algorithm("HS256".into())));
    // The server's own issuer signs with ES256 only.
    let mut c = claims();
    c["iss"] = json!(f.own_issuer);
    assert_eq!(verify(&f, &sign(&f.rsa, &c)), Err(TokenError::KeyMismatch));
}

#[test]
fn api_keys_and_garbage_are_not_id_tokens() {
    let f = fixture();
    let key = format!("wm_{}", "ab".repeat(32));
    assert_eq!(verify(&f, &key), Err(TokenError::ApiKey));
    for garbage in ["", "abc", "a.b.c", "eyJhbGciOiJFUzI1NiJ9.e30"] {
        assert!(
            matches!(verify(&f, garbage), Err(TokenError::Malformed(_))),
            "{garbage:?}: {:?}",
            verify(&f, garbage)
        );
    }
}

#[test]
fn required_claims_must_be_present() {
    let f = fixture();
    for claim in ["sub", "exp", "aud", "tenant"] {
        let mut c = claims();
        c.as_object_mut().unwrap().remove(claim);
        let got = verify(&f, &sign(&f.rsa, &c));
        assert_eq!(got, Err(TokenError::MissingClaim(claim.into())), "{claim}");
    }
    let mut c = claims();
    c["tenant"] = json!(42);
    assert_eq!(
        verify(&f, &sign(&f.rsa, &c)),
        Err(TokenError::MissingClaim("tenant".into()))
    );
}

/// A provider whose keys are at a `jwks_url`: fetched on first use; a token naming an
/// unknown key fetches again, but not more than once per interval.
#[test]
fn jwks_url_keys_are_fetched_on_first_use_and_refetched_sparingly() {
    use std::sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    };

    let f = fixture();
    let served = json!({ "keys": [jwk(&f.ec)] }).to_string();
    let fetches = Arc::new(AtomicUsize::new(0));
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/jwks", listener.local_addr().unwrap());
    let counter = fetches.clone();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            listener.set_nonblocking(true).unwrap();
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            let app = axum::Router::new().route(
                "/jwks",
                axum::routing::get(move || {
                    counter.fetch_add(1, Ordering::SeqCst);
                    let body = served.clone();
                    async move { body }
                }),
            );
            axum::serve(listener, app).await.unwrap();
        });
    });
    let verifier = Verifier::new(
        f.own_key_copy(),
        Some(
            ProviderKeys::new(Provider {
                issuer: IDP.into(),
                audience: AUD.into(),
                keys: KeySource::Url(url),
                account_claim: "tenant".into(),
            })
            .unwrap(),
        ),
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    assert_eq!(
        fetches.load(Ordering::SeqCst),
        0,
        "nothing fetched before a token"
    );
    let good = runtime.block_on(verifier.verify(&sign(&f.ec, &claims())));
    assert_eq!(good.unwrap().account, "acme");
    assert_eq!(fetches.load(Ordering::SeqCst), 1);
    // Known key: no fetch. Unknown key: refused, and within the interval not refetched.
    runtime
        .block_on(verifier.verify(&sign(&f.ec, &claims())))
        .unwrap();
    let unknown = runtime.block_on(verifier.verify(&sign(&f.rsa, &claims())));
    assert_eq!(unknown, Err(TokenError::UnknownKey));
    assert_eq!(fetches.load(Ordering::SeqCst), 1);
}

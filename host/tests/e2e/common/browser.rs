//! Headless Chromium driven over WebDriver: Debian's `chromedriver` started on a free
//! loopback port, a fresh profile, and `fantoccini` speaking to it. The calls are blocking
//! (each runs on the browser's own tokio runtime) so a test mixes them freely with the
//! blocking HTTP [`super::Client`]. A missing browser fails the test: `scripts/setup`
//! installs it (`scripts/setup-tests.d/30-chromium`).

use std::{
    net::TcpListener,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use fantoccini::{Client, ClientBuilder, Locator, elements::Element, error::CmdError};
use serde_json::{Value, json};

/// How long any one wait on the page may take before the test fails.
const WAIT: Duration = Duration::from_secs(30);

/// Flags this machine needs: headless, no sandbox (root in a container), and no traffic of
/// Chromium's own (the network is closed; its background services would only flood
/// refused connections).
const FLAGS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1280,1000",
];

/// A browser session; closed and its driver killed on drop.
pub struct Browser {
    rt: tokio::runtime::Runtime,
    client: Option<Client>,
    driver: Child,
    _profile: tempfile::TempDir,
}

/// `name` on `PATH`, or a failure that says how to install it.
fn required(name: &str) -> PathBuf {
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join(name))
        .find(|path| path.is_file())
        .unwrap_or_else(|| {
            panic!(
                "`{name}` is not on PATH: the console's browser test needs it (run scripts/setup)"
            )
        })
}

impl Browser {
    /// Starts chromedriver and a headless Chromium session.
    pub fn start() -> Browser {
        let chromium = required("chromium");
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free loopback port")
            .port();
        let driver = Command::new(required("chromedriver"))
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting chromedriver");
        let profile = tempfile::tempdir().unwrap();
        let mut args: Vec<String> = FLAGS.iter().map(|f| f.to_string()).collect();
        args.push(format!("--user-data-dir={}", profile.path().display()));
        let capabilities = json!({
            "browserName": "chrome",
            "goog:chromeOptions": { "binary": chromium, "args": args },
        });
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let webdriver = format!("http://127.0.0.1:{port}");
        let client = rt.block_on(async {
            // chromedriver listens a moment after it starts: retry the session until it does.
            let start = Instant::now();
            loop {
                let mut builder =
                    ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new());
                builder.capabilities(capabilities.as_object().unwrap().clone());
                match builder.connect(&webdriver).await {
                    Ok(client) => break client,
                    Err(_) if start.elapsed() < WAIT => {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    Err(e) => panic!("no WebDriver session from chromedriver: {e}"),
                }
            }
        });
        Browser {
            rt,
            client: Some(client),
            driver,
            _profile: profile,
        }
    }

    fn client(&self) -> &Client {
        self.client.as_ref().unwrap()
    }

    fn run<T>(&self, what: &str, f: impl Future<Output = Result<T, CmdError>>) -> T {
        self.rt
            .block_on(f)
            .unwrap_or_else(|e| panic!("browser: {what}: {e}"))
    }

    /// Loads `url`.
    pub fn goto(&self, url: &str) {
        self.run(url, self.client().goto(url));
    }

    /// The address bar.
    pub fn url(&self) -> String {
        self.run("current url", self.client().current_url())
            .to_string()
    }

    /// Runs `script` (a function body: `return …`) in the page.
    pub fn execute(&self, script: &str) -> Value {
        self.run(script, self.client().execute(script, vec![]))
    }

    /// Polls `script` until it returns something truthy (not null, false, 0 or ""), and
    /// returns that; fails with `what` and the page's notice line after [`WAIT`].
    #[track_caller]
    pub fn wait(&self, what: &str, script: &str) -> Value {
        let start = Instant::now();
        loop {
            let value = self.execute(script);
            let truthy = match &value {
                Value::Null | Value::Bool(false) => false,
                Value::Number(n) => n.as_f64() != Some(0.0),
                Value::String(s) => !s.is_empty(),
                _ => true,
            };
            if truthy {
                return value;
            }
            if start.elapsed() > WAIT {
                let page = self.execute(
                    "return document.getElementById('notice')?.textContent + ' | ' + \
                     document.getElementById('signin-error')?.textContent",
                );
                panic!("the page never showed {what} (last: {value}; errors: {page})");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The text of the first element matching `css`, once there is one with text.
    #[track_caller]
    pub fn text(&self, css: &str) -> String {
        let script = format!(
            "return document.querySelector({})?.textContent.trim() ?? ''",
            json!(css)
        );
        self.wait(css, &script).as_str().unwrap().to_string()
    }

    fn find(&self, css: &str) -> Element {
        let wait = self.client().wait().at_most(WAIT);
        self.run(css, wait.for_element(Locator::Css(css)))
    }

    /// Clicks the element matching `css`, once it is there. An element the page
    /// re-rendered between finding and clicking it (a table refreshed after a fetch) is
    /// found again, as a user would click the one now shown; one not shown yet (a reloaded
    /// page still signing in) is clicked once it is.
    pub fn click(&self, css: &str) {
        let start = Instant::now();
        loop {
            let element = self.find(css);
            match self.rt.block_on(element.click()) {
                Err(e)
                    if (e.is_stale_element_reference() || e.is_element_not_interactable())
                        && start.elapsed() < WAIT =>
                {
                    std::thread::sleep(Duration::from_millis(50));
                }
                clicked => return clicked.unwrap_or_else(|e| panic!("browser: {css}: {e}")),
            }
        }
    }

    /// Types `text` into the (emptied) field matching `css`.
    pub fn fill(&self, css: &str, text: &str) {
        let element = self.find(css);
        self.run(css, element.clear());
        self.run(css, element.send_keys(text));
    }

    /// Accepts the `confirm()` dialog the last click opened, once it is open.
    pub fn accept_dialog(&self) {
        let start = Instant::now();
        while self.rt.block_on(self.client().get_alert_text()).is_err() {
            assert!(start.elapsed() < WAIT, "no dialog opened");
            std::thread::sleep(Duration::from_millis(50));
        }
        self.run("accepting the dialog", self.client().accept_alert());
    }

    /// Saves a PNG of the viewport as `<dir>/<name>.png` when `WASMIND_SCREENSHOTS` names a
    /// directory (relative paths from the repository's root); does nothing otherwise, so
    /// test runs never write into the checkout unasked.
    pub fn screenshot(&self, name: &str) {
        let Some(dir) = std::env::var_os("WASMIND_SCREENSHOTS") else {
            return;
        };
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let dir = root.join(dir);
        std::fs::create_dir_all(&dir).unwrap();
        let png = self.run("screenshot", self.client().screenshot());
        std::fs::write(dir.join(format!("{name}.png")), png).unwrap();
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if let Some(client) = self.client.take() {
            let _ = self.rt.block_on(client.close());
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

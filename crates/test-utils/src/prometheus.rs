//! A real Prometheus for the metrics tests: starts a real Prometheus (Debian's `prometheus` package) on a
//! loopback port, scraping one target every second, and queries it over its HTTP API.
//!
//! Nothing here is mocked: the tests that use it check what a real Prometheus stored from a real
//! run. The server is killed when the [`Prometheus`] value is dropped.

use std::{
    io::{Read, Write},
    net::{TcpListener, TcpStream},
    path::Path,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

/// A free TCP port on 127.0.0.1 (bound and released).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| panic!("no free loopback port: {e}"))
}

/// A running Prometheus; killed on drop.
pub struct Prometheus {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Prometheus {
    /// Starts Prometheus scraping `127.0.0.1:target_port` every second, and waits until it answers.
    /// Panics (this is test support) when Prometheus is not installed or does not start.
    pub fn start(job: &str, target_port: u16) -> Self {
        let binary = ["/usr/bin/prometheus", "/usr/local/bin/prometheus"]
            .into_iter()
            .find(|p| Path::new(p).exists())
            .expect("Prometheus is not installed: apt-get install prometheus (.ci/run does)");
        let dir = tempfile::tempdir().expect("tempdir");
        let config = dir.path().join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: {job}\n    static_configs:\n      - targets: ['127.0.0.1:{target_port}']\n"
            ),
        )
        .expect("write prometheus.yml");
        let port = free_port();
        let child = Command::new(binary)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("tsdb").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start prometheus");
        let prometheus = Self {
            child,
            port,
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        while prometheus.query_at("up", None).is_none() {
            assert!(
                Instant::now() < deadline,
                "Prometheus did not start on port {port}"
            );
            std::thread::sleep(Duration::from_millis(250));
        }
        prometheus
    }

    /// An instant query (at `time`, unix seconds, or now): the `data.result` array, or `None` when
    /// the query failed.
    pub fn query_at(&self, promql: &str, time: Option<f64>) -> Option<serde_json::Value> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).ok()?;
        stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
        let at = time.map(|t| format!("&time={t:.3}")).unwrap_or_default();
        write!(
            stream,
            "GET /api/v1/query?query={}{at} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n",
            encode(promql)
        )
        .ok()?;
        let mut response = String::new();
        stream.read_to_string(&mut response).ok()?;
        let body = response.split("\r\n\r\n").nth(1)?;
        let json: serde_json::Value = serde_json::from_str(body).ok()?;
        (json["status"] == "success").then(|| json["data"]["result"].clone())
    }

    /// The first sample's value of an instant query now, if any.
    pub fn value(&self, promql: &str) -> Option<f64> {
        self.query_at(promql, None)?[0]["value"][1]
            .as_str()?
            .parse()
            .ok()
    }

    /// Waits (up to 30 s) until `max_over_time(metric[10m])` equals `expected`; panics otherwise.
    /// (After a run ends its series go stale; the range keeps its last value queryable.)
    pub fn expect_last_value(&self, metric: &str, expected: f64) {
        self.expect_value(&format!("max_over_time({metric}[10m])"), expected);
    }

    /// Waits (up to 30 s) until the instant query `promql` answers `expected`; panics otherwise.
    pub fn expect_value(&self, promql: &str, expected: f64) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match self.value(promql) {
                Some(v) if v == expected => return,
                other if Instant::now() > deadline => {
                    panic!("{promql}: Prometheus has {other:?}, the run says {expected}")
                }
                _ => std::thread::sleep(Duration::from_millis(500)),
            }
        }
    }

    /// Runs every PromQL expression of every panel of a Grafana dashboard at `time` and panics unless
    /// each returns data. Returns how many expressions were checked.
    pub fn check_dashboard(&self, dashboard: &Path, time: f64) -> usize {
        let json: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dashboard).expect("read dashboard"))
                .expect("dashboard JSON");
        let mut checked = 0;
        for panel in json["panels"].as_array().expect("panels") {
            for target in panel["targets"].as_array().expect("targets") {
                let expr = target["expr"].as_str().expect("expr");
                let result = self.query_at(expr, Some(time)).unwrap_or_else(|| {
                    panic!(
                        "{}: panel {}: query {expr} failed",
                        dashboard.display(),
                        panel["title"]
                    )
                });
                assert!(
                    result.as_array().is_some_and(|r| !r.is_empty()),
                    "{}: panel {}: {expr} returned no data",
                    dashboard.display(),
                    panel["title"]
                );
                checked += 1;
            }
        }
        checked
    }
}

/// Seconds since the Unix epoch, now.
pub fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or_default()
}

fn encode(query: &str) -> String {
    query
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b == b'_' {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

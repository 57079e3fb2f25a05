//! A real Prometheus (Debian's package) scrapes a real `bal-replay run`; the values it stores must be
//! the run's own totals.

use std::{
    io::{Read, Write},
    net::{TcpListener, TcpStream},
    path::Path,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

/// Kills the child when the test ends, however it ends.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn prometheus_binary() -> String {
    for candidate in ["/usr/bin/prometheus", "/usr/local/bin/prometheus"] {
        if Path::new(candidate).exists() {
            return candidate.into();
        }
    }
    panic!("Prometheus is not installed: apt-get install prometheus (.ci/run does)");
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

/// One instant query against Prometheus's HTTP API (at `time`, unix seconds, or now): the result.
fn query_result(port: u16, promql: &str, time: Option<f64>) -> Option<serde_json::Value> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
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
fn query(port: u16, promql: &str) -> Option<f64> {
    query_result(port, promql, None)?[0]["value"][1]
        .as_str()?
        .parse()
        .ok()
}

#[test]
fn prometheus_scrapes_the_run_totals() {
    let prometheus = prometheus_binary();
    let tmp = tempfile::tempdir().unwrap();
    let dump = tmp.path().join("dump");
    let state = tmp.path().join("state");
    let config = bal_replay_synth::GeneratorConfig {
        blocks: 6,
        accounts: 2_000,
        holders_per_token: 200,
        gas_per_block: 5_000_000,
        ..Default::default()
    };
    bal_replay_synth::generate(&config, &dump, &state, None).unwrap();

    let metrics_port = free_port();
    let prom_port = free_port();
    let config_path = tmp.path().join("prometheus.yml");
    std::fs::write(
        &config_path,
        format!(
            "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: bal-replay\n    static_configs:\n      - targets: ['127.0.0.1:{metrics_port}']\n"
        ),
    )
    .unwrap();
    let _prometheus = KillOnDrop(
        Command::new(prometheus)
            .arg(format!("--config.file={}", config_path.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                tmp.path().join("tsdb").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{prom_port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start prometheus"),
    );

    // Wait until Prometheus serves queries, so it scrapes the run from its start.
    let ready_deadline = Instant::now() + Duration::from_secs(60);
    while query_result(prom_port, "up", None).is_none() {
        assert!(
            Instant::now() < ready_deadline,
            "Prometheus did not start on port {prom_port}"
        );
        std::thread::sleep(Duration::from_millis(250));
    }

    let summary_path = tmp.path().join("summary.json");
    let status = Command::new(env!("CARGO_BIN_EXE_bal-replay"))
        .args([
            "run",
            "--threads",
            "2",
            "--batch",
            "2",
            "--io",
            "hybrid",
            "--metrics-linger",
            "10",
        ])
        .arg("--dump")
        .arg(&dump)
        .arg("--state")
        .arg(&state)
        .arg("--metrics")
        .arg(format!("127.0.0.1:{metrics_port}"))
        .arg("--json")
        .arg(&summary_path)
        .stderr(Stdio::null())
        .status()
        .expect("run bal-replay");
    assert!(status.success());
    // The run lingered 10 s after replaying, scraped every second: just before it exited, its final
    // values were live with several samples in any 1-minute window.
    let live_at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
        - 0.5;
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&summary_path).unwrap()).unwrap();
    let expect = |key: &str| summary[key].as_f64().unwrap();
    assert_eq!(expect("blocks"), 6.0);

    // The target is gone now; the last scraped values stay queryable over a range.
    let checks = [
        ("bal_replay_gas_total", expect("gas")),
        ("bal_replay_transactions_total", expect("transactions")),
        ("bal_replay_blocks_total", expect("blocks")),
        ("bal_replay_batches_total", expect("batches")),
        ("bal_replay_cache_hits_total", expect("cache_hits")),
        ("bal_replay_cache_misses_total", expect("cache_misses")),
    ];
    let deadline = Instant::now() + Duration::from_secs(30);
    for (metric, expected) in checks {
        let promql = format!("max_over_time({metric}[10m])");
        let got = loop {
            match query(prom_port, &promql) {
                Some(v) if v == expected => break v,
                other if Instant::now() > deadline => {
                    panic!("{promql}: Prometheus has {other:?}, the run says {expected}")
                }
                _ => std::thread::sleep(Duration::from_millis(500)),
            }
        };
        assert_eq!(got, expected, "{metric}");
    }
    check_dashboard(prom_port, "replay.json", live_at);
    // Histograms and gauges arrived too.
    assert!(
        query(
            prom_port,
            "max_over_time(bal_replay_batch_duration_seconds_count[10m])"
        )
        .is_some_and(|n| n == expect("batches"))
    );
    assert!(
        query(
            prom_port,
            "max_over_time(bal_replay_resident_memory_bytes[10m])"
        )
        .is_some_and(|b| b > 1e6)
    );
}

/// Every PromQL expression of every panel of the replay dashboard returns data for the run.
fn check_dashboard(prom_port: u16, dashboard: &str, live_at: f64) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../docker/grafana/dashboards")
        .join(dashboard);
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let mut exprs = 0;
    for panel in json["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().unwrap() {
            let expr = target["expr"].as_str().unwrap();
            let result = query_result(prom_port, expr, Some(live_at)).unwrap_or_else(|| {
                panic!(
                    "{dashboard}: panel {:?}: query {expr} failed",
                    panel["title"]
                )
            });
            assert!(
                result.as_array().is_some_and(|r| !r.is_empty()),
                "{dashboard}: panel {:?}: {expr} returned no data",
                panel["title"]
            );
            exprs += 1;
        }
    }
    assert!(exprs >= 12, "{dashboard}: only {exprs} expressions");
}

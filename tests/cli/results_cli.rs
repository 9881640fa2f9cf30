//! `connstorm report`, `compare` and `plot` end to end, on golden and synthetic records.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use testkit::stderr;

use results::record::RunRecord;

fn golden() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("results/tests/data/golden-v2.json")
}

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("results/tests/data")
        .join(name)
}

fn connstorm(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_connstorm"))
        .args(args)
        .output()
        .expect("run connstorm")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn ok(args: &[&str]) -> String {
    let o = connstorm(args);
    assert_eq!(
        o.status.code(),
        Some(0),
        "connstorm {args:?} failed: {}",
        stderr(&o)
    );
    stdout(&o)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn report_prints_rates_percentiles_buckets_and_drop_warnings() {
    let g = golden();
    let rec = RunRecord::read(&g).unwrap();
    let phase = rec.phase("latency").unwrap();
    let text = ok(&["report", s(&g), "--buckets", "250us,1ms"]);
    for needle in [
        "CPM",
        "conn/s",
        "p99.99",
        "stddev",
        "ETIMEDOUT 2",
        "< 250.0 µs",
        ">= 1.00 ms",
        "WARNING",
        "ListenOverflows",
    ] {
        assert!(text.contains(needle), "{needle:?} missing:\n{text}");
    }
    assert!(
        text.contains(&format!("{} CPM", results::numfmt::fixed_opt(phase.cpm, 0))),
        "{text}"
    );
    assert!(
        text.contains("60,000 CPM"),
        "thousands separators in text: {text}"
    );

    let json: serde_json::Value =
        serde_json::from_str(&ok(&["report", s(&g), "--format", "json"])).unwrap();
    let hs = phase
        .histograms
        .decode(results::record::Latency::Handshake)
        .unwrap()
        .unwrap();
    assert_eq!(
        json[0]["phases"][0]["latency"][0]["summary"]["p99_ns"],
        hs.value_at_quantile(0.99)
    );

    let all = ok(&["report", s(&g), "--all-counters"]);
    assert!(all.contains("kernel counters:"), "{all}");

    let csv = ok(&["report", s(&g), "--format", "csv"]);
    assert_eq!(csv.lines().count(), 1 + rec.phases.len());
    assert!(ok(&["report", s(&g), "--format", "markdown"]).contains("|---|"));
}

#[test]
fn report_writes_interval_logs() {
    let dir = tempfile::tempdir().unwrap();
    let g = golden();
    ok(&[
        "report",
        s(&g),
        "--hlog",
        s(dir.path()),
        "-o",
        s(&dir.path().join("report.txt")),
    ]);
    let hlog = std::fs::read_to_string(dir.path().join("golden-v2.latency.hlog")).unwrap();
    assert!(
        hlog.contains("#[StartTime: 1795990503.000 "),
        "ms resolution: {hlog}"
    );
    assert!(
        hlog.lines().any(|l| l.starts_with("0.500,1.000,")),
        "the second starts at the phase start (0.5 s): {hlog}"
    );
    assert!(hlog.contains("#[StartTime: "), "{hlog}");
    assert_eq!(
        hlog.lines().filter(|l| l.contains("HISTF")).count(),
        3,
        "handshake, service, first byte:\n{hlog}"
    );
    assert!(std::fs::read_to_string(dir.path().join("report.txt"))
        .unwrap()
        .contains("CPM"));
}

/// Runs `connstorm` with `args` in `dir` (for `./in.json` spellings).
fn connstorm_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_connstorm"))
        .current_dir(dir)
        .args(args)
        .output()
        .expect("run connstorm")
}

/// `report in.json --format html -o in.json`, `compare in.json -- other.json -o in.json`,
/// `merge L0.json L1.json -o L1.json` replaced an input record and exited 0. Every command that
/// reads records and writes a file refuses an output that is one of them (exit 2, naming the
/// record), in every spelling (`./`, a symlink, a hard link, `--hlog` logs named after a record),
/// before writing anything.
#[test]
fn lost_data_an_output_that_is_an_input_record_is_refused_before_writing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let golden_bytes = std::fs::read(golden()).unwrap();
    let other_rec = {
        let mut r = RunRecord::read(&golden()).unwrap();
        r.run.started_unix_ms = r.run.started_unix_ms.map(|t| t + 1);
        r.to_json()
    };
    let reset = || {
        std::fs::write(d.join("in.json"), &golden_bytes).unwrap();
        std::fs::write(d.join("other.json"), &other_rec).unwrap();
        std::fs::write(d.join("in.svg"), &golden_bytes).unwrap();
        std::fs::write(d.join("run.latency.hlog"), &golden_bytes).unwrap();
        std::fs::write(d.join("run.json"), &other_rec).unwrap();
    };
    reset();
    std::os::unix::fs::symlink("in.json", d.join("link.json")).unwrap();
    std::fs::create_dir(d.join("sub")).unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["report", "in.json", "--format", "html", "-o", "in.json"],
            "in.json",
        ),
        (vec!["report", "in.json", "-o", "./in.json"], "in.json"),
        (
            vec!["report", "in.json", "-o", "sub/../link.json"],
            "in.json",
        ),
        (
            vec!["report", "link.json", "--format", "csv", "-o", "in.json"],
            "link.json",
        ),
        (
            vec![
                "compare",
                "in.json",
                "--",
                "other.json",
                "--allow-mismatch",
                "-o",
                "in.json",
            ],
            "in.json",
        ),
        (
            vec![
                "compare",
                "in.json",
                "--",
                "other.json",
                "--allow-mismatch",
                "-o",
                "./other.json",
            ],
            "other.json",
        ),
        (
            vec!["merge", "in.json", "other.json", "-o", "other.json"],
            "other.json",
        ),
        (vec!["plot", "in.svg", "-o", "./in.svg"], "in.svg"),
        (
            vec![
                "plot", "--kind", "ab", "in.json", "--", "in.svg", "-o", "in.svg",
            ],
            "in.svg",
        ),
        // The interval log of run.json's latency phase would be run.latency.hlog, a record.
        (
            vec!["report", "run.json", "run.latency.hlog", "--hlog", "."],
            "run.latency.hlog",
        ),
    ];
    for (args, input) in &cases {
        reset();
        let o = connstorm_in(d, args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(&format!("is the input record {input}"))
                && err.contains("give another output path"),
            "{args:?}: {err}"
        );
        assert_eq!(o.stdout, b"", "{args:?}: nothing written to stdout");
        for f in ["in.json", "in.svg", "run.latency.hlog"] {
            assert_eq!(
                std::fs::read(d.join(f)).unwrap(),
                golden_bytes,
                "{args:?}: {f}"
            );
        }
        assert_eq!(
            std::fs::read_to_string(d.join("other.json")).unwrap(),
            other_rec
        );
        let stray: Vec<_> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".tmp") || n.ends_with(".hlog") && n != "run.latency.hlog")
            .collect();
        assert!(stray.is_empty(), "{args:?}: {stray:?}");
    }
    // Two records of the same name would write the same interval logs: refused, naming both.
    std::fs::write(d.join("sub/in.json"), &other_rec).unwrap();
    let o = connstorm_in(d, &["report", "in.json", "sub/in.json", "--hlog", "logs"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("in.json and sub/in.json would both write logs/in.latency.hlog"),
        "{}",
        stderr(&o)
    );
    assert!(!d.join("logs").exists(), "nothing written");
    // Other outputs still work.
    let o = connstorm_in(
        d,
        &["report", "in.json", "-o", "report.txt", "--hlog", "logs"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(d.join("logs/in.latency.hlog").exists());
}

/// `report R.json --hlog in.json` (a file) was exit 1 "File exists (os error 17); check free
/// space and permissions": the path is wrong, not the disk.
#[test]
fn hlog_naming_a_file_is_bad_input_not_an_io_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("in.json");
    std::fs::copy(golden(), &file).unwrap();
    let o = connstorm(&["report", s(&golden()), "--hlog", s(&file)]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(
        stderr(&o).trim_end(),
        format!(
            "connstorm: error: --hlog {} is not a directory: give a directory (created if missing)",
            s(&file)
        )
    );
    assert_eq!(o.stdout, b"", "refused before the report");
    let o = connstorm(&["report", s(&golden()), "--hlog", s(&file.join("logs"))]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("{} is not a directory", s(&file))),
        "{}",
        stderr(&o)
    );
}

#[test]
fn bad_record_files_exit_2_naming_the_file() {
    for name in [
        "newer-schema.json",
        "truncated.json",
        "garbage.json",
        "missing-field.json",
        "no-such-file.json",
    ] {
        let o = connstorm(&["report", s(&data(name))]);
        assert_eq!(o.status.code(), Some(2), "{name}: {}", stderr(&o));
        assert!(stderr(&o).contains(name), "{name}: {}", stderr(&o));
    }
    let o = connstorm(&["report", s(&golden()), "--buckets", "1ms,100us"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

/// A record whose label is megabytes long (hand-edited) made `report --format html` write
/// 268 MB in 9 s (the label is in every table and plot): refused when read, naming the field,
/// by every reader; and `bench --label` refuses one over the bound before running anything.
#[test]
fn bad_input_an_unbounded_label_is_refused_when_read_and_when_given() {
    let tmp = tempfile::tempdir().unwrap();
    let mut rec = RunRecord::example();
    rec.label = "L".repeat(16 << 20);
    let path = tmp.path().join("long-label.json");
    std::fs::write(&path, rec.to_json()).unwrap();
    let other = write_records(tmp.path(), &[("other.json", &RunRecord::example())]);
    for args in [
        vec!["report", s(&path), "--format", "html"],
        vec!["report", s(&path)],
        vec!["compare", s(&other[0]), s(&path)],
        vec!["plot", s(&path), "--output", "x.svg"],
    ] {
        let t0 = std::time::Instant::now();
        let o = connstorm_in(tmp.path(), &args);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{:?}: {e}", &args[..1]);
        assert!(
            e.contains("long-label.json: its label is 16,777,216 bytes, longer than connstorm writes (at most 1,024)"),
            "{:?}: {e}",
            &args[..1]
        );
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(20),
            "{:?}",
            &args[..1]
        );
    }
    assert!(!tmp.path().join("x.svg").exists());
    let long = "b".repeat(1025);
    let o = connstorm(&["bench", "--label", &long, "--duration", "1s"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("1,025 bytes: a label is at most 1,024 bytes"),
        "{}",
        stderr(&o)
    );
}

/// Writes `n` trials of the example record with the connection rate scaled by `factor` and a
/// little deterministic noise; returns their paths.
fn trials(dir: &Path, label: &str, factor: f64, n: usize) -> Vec<PathBuf> {
    (0..n)
        .map(|i| {
            let mut rec = RunRecord::example();
            rec.label = label.into();
            // Distinct runs: each its own start instant (one host runs one at a time).
            let side: u64 = label.bytes().map(u64::from).sum::<u64>() * 100;
            rec.run.started_unix_ms = rec.run.started_unix_ms.map(|t| t + side + i as u64);
            let noise = 1.0 + 0.005 * ((i as f64 * 2.3).sin());
            for p in &mut rec.phases {
                // The same successes in less time: the rate moves, the record stays consistent.
                p.measured_secs /= factor * noise;
                p.set_rates();
            }
            rec.write_atomic(dir).unwrap()
        })
        .collect()
}

#[test]
fn compare_detects_a_ten_percent_gain_and_says_how() {
    let dir = tempfile::tempdir().unwrap();
    let a = trials(&dir.path().join("a"), "off", 1.0, 5);
    let b = trials(&dir.path().join("b"), "on", 1.1, 5);
    let mut args = vec!["compare"];
    args.extend(a.iter().map(|p| s(p)));
    args.push("--");
    args.extend(b.iter().map(|p| s(p)));
    let text = ok(&args);
    let line = text.lines().find(|l| l.contains("connections/s")).unwrap();
    assert!(line.contains("better") && line.contains("+10."), "{line}");
    assert!(line.contains("peak phase"), "{line}");
    let sys = text.lines().find(|l| l.contains("sys %")).unwrap();
    assert!(sys.contains("peak phase"), "{sys}");
    assert!(
        text.contains("sys %: system CPU time") && text.contains("CPU capacity"),
        "sys % is explained: {text}"
    );
    assert!(text.contains("Hodges-Lehmann"), "{text}");
    assert!(
        text.contains("A: off (5 trials, 5 in the verdict)"),
        "{text}"
    );
    let p99 = text.lines().find(|l| l.contains("handshake p99")).unwrap();
    assert!(p99.contains("no significant change"), "{p99}");
    assert!(p99.contains("latency phase"), "{p99}");

    let mut args = vec!["compare", "--format", "json", "--a"];
    args.extend(a.iter().map(|p| s(p)));
    args.push("--b");
    args.extend(a.iter().map(|p| s(p)));
    // The same runs on both sides are refused (identical distributions → no verdict is
    // asserted on synthetic samples in results::compare's unit tests).
    let o = connstorm(&args);
    assert_eq!(o.status.code(), Some(2), "A vs A: {}", stderr(&o));
    assert!(stderr(&o).contains("are the same run"), "{}", stderr(&o));

    let md = ok(&["compare", s(&a[0]), s(&b[0]), "--format", "markdown"]);
    assert!(
        md.contains("| connections/s (peak phase, higher is better) |")
            && md.contains("inconclusive"),
        "{md}"
    );
    let o = connstorm(&["compare", s(&a[0])]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));

    // Options after side B's files are options, not files.
    let out = dir.path().join("cmp.json");
    let mut args = vec!["compare"];
    args.extend(a.iter().map(|p| s(p)));
    args.push("--");
    args.extend(b.iter().map(|p| s(p)));
    args.extend(["-o", s(&out), "--format", "json"]);
    assert_eq!(ok(&args), "", "written to the file, not stdout");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(json["metrics"][0]["verdict"], "better");
    assert_eq!(
        (json["a"]["name"].as_str(), json["b"]["name"].as_str()),
        (Some("off"), Some("on"))
    );
}

/// Issue 37, "A/B reading" and "A/B latency": the default table fits 120 columns, --label-a and
/// --label-b name the sides, --wide shows every column; latency phases run at different
/// offered rates are not compared.
#[test]
fn compare_fits_120_columns_names_its_sides_and_compares_latency_only_at_one_rate() {
    let dir = tempfile::tempdir().unwrap();
    let a = trials(&dir.path().join("a"), "off", 1.0, 5);
    let b = trials(&dir.path().join("b"), "on", 1.1, 5);
    let mut args = vec!["compare", "--label-a", "6.18", "--label-b", "6.18+fix"];
    args.extend(a.iter().map(|p| s(p)));
    args.push("--");
    args.extend(b.iter().map(|p| s(p)));
    let text = ok(&args);
    let table: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("metric"))
        .take_while(|l| !l.starts_with("note:"))
        .collect();
    assert!(
        table[0].contains("A: 6.18") && table[0].contains("B: 6.18+fix"),
        "{text}"
    );
    assert!(table.iter().all(|l| l.chars().count() <= 120), "{text}");
    assert!(
        text.contains("verdict (B vs A): connections/s (peak phase) +10."),
        "{text}"
    );
    args.push("--wide");
    let wide = ok(&args);
    assert!(wide.contains("median [min – max]"), "{wide}");
    // B's latency phases at another offered rate: latency not compared.
    let b2: Vec<PathBuf> = b
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let mut r = RunRecord::read(p).unwrap();
            let lat = r.phases.iter_mut().find(|p| p.name == "latency").unwrap();
            lat.offered_per_sec = Some(2_000.0 + i as f64);
            if let results::record::Pattern::Open { rate_per_sec, .. } = &mut lat.pattern {
                *rate_per_sec = 2_000.0 + i as f64;
            }
            r.write_atomic(&dir.path().join("b2")).unwrap()
        })
        .collect();
    let mut args = vec!["compare", "--format", "json"];
    args.extend(a.iter().map(|p| s(p)));
    args.push("--");
    args.extend(b2.iter().map(|p| s(p)));
    let json: serde_json::Value = serde_json::from_str(&ok(&args)).unwrap();
    let p99 = json["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "handshake p99")
        .unwrap();
    assert_eq!(p99["verdict"], "different_loads", "{p99}");
    assert!(json["offered_per_sec"].is_null());
}

/// `compare` of a loopback bench with an external-target bench: refused (exit 2) naming the
/// difference, before any output; `--allow-mismatch` compares and lists it.
#[test]
fn compare_refuses_mixed_setups_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let a = trials(&dir.path().join("a"), "loopback", 1.0, 5);
    let b: Vec<PathBuf> = (0..5)
        .map(|i| {
            let mut rec = RunRecord::example();
            rec.label = "external".into();
            rec.run.target = Some("10.0.0.2:8080".into());
            // Five distinct runs (a repeated run is refused on its own).
            rec.run.started_unix_ms = rec.run.started_unix_ms.map(|t| t + i);
            rec.write_atomic(&dir.path().join("b")).unwrap()
        })
        .collect();
    let out = dir.path().join("x.txt");
    let mut args = vec!["compare", "--a"];
    args.extend(a.iter().map(|p| s(p)));
    args.push("--b");
    args.extend(b.iter().map(|p| s(p)));
    args.extend(["-o", s(&out)]);
    let o = connstorm(&args);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("target: A own server on loopback, B 10.0.0.2:8080"),
        "{}",
        stderr(&o)
    );
    assert!(!out.exists(), "nothing written before the refusal");
    args.push("--allow-mismatch");
    ok(&args);
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.contains("setup differs: target"), "{text}");
    // `plot --kind ab` applies the same refusal, and the same way out.
    let png = dir.path().join("ab.svg");
    let mut plot = vec!["plot", "--kind", "ab", "-o", s(&png)];
    plot.extend(a.iter().map(|p| s(p)));
    plot.push("--");
    plot.extend(b.iter().map(|p| s(p)));
    let o = connstorm(&plot);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("target: A own server on loopback"),
        "{}",
        stderr(&o)
    );
    assert!(!png.exists(), "nothing drawn before the refusal");
    plot.push("--allow-mismatch");
    ok(&plot);
    assert!(png.exists());
}

/// The same run given twice (same path, or a copy) is refused before any output: a repeated
/// trial would make the verdict look stronger than the data are.
#[test]
fn compare_refuses_a_run_given_twice() {
    let dir = tempfile::tempdir().unwrap();
    let a = trials(&dir.path().join("a"), "off", 1.0, 3);
    let b = trials(&dir.path().join("b"), "on", 1.1, 3);
    let copy = dir.path().join("copy.json");
    std::fs::copy(&b[0], &copy).unwrap();
    // The same run with only its label edited is still the same run (host + start instant).
    let mut relabelled = RunRecord::read(&b[1]).unwrap();
    relabelled.label = "another label".into();
    let relabelled = relabelled.write_atomic(&dir.path().join("c")).unwrap();
    for extra in [&a[0], &copy, &relabelled] {
        let mut args = vec!["compare"];
        args.extend(a.iter().map(|p| s(p)));
        args.push("--");
        args.extend(b.iter().map(|p| s(p)));
        args.push(s(extra));
        let o = connstorm(&args);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(stderr(&o).contains("are the same run"), "{}", stderr(&o));
    }
}

/// Zero-connection records: CPU per connection is n/a (null in JSON), never 0 or "-100%".
#[test]
fn compare_of_zero_connection_records_gives_no_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let paths: Vec<PathBuf> = (0..3)
        .map(|i| {
            let mut rec = RunRecord::example();
            rec.run.started_unix_ms = rec.run.started_unix_ms.map(|t| t + i);
            for p in &mut rec.phases {
                p.successes = 0;
                // What older builds wrote for a phase without a success (read as null).
                p.achieved_per_sec = Some(0.0);
                p.cpm = Some(0.0);
                // Every attempt failed: no handshake sample.
                p.failures = [("ETIMEDOUT".to_string(), p.attempts)].into();
                let empty =
                    results::record::encode_histogram(&results::record::new_latency_histogram());
                p.histograms.handshake = empty.clone();
                p.histograms.service = empty;
                p.cpu.load = results::record::SideCpu::new(0, 1_900_000_000, 3_000_000_000, 1, 0);
                p.cpu.server = Some(p.cpu.load);
            }
            rec.write_atomic(dir.path()).unwrap()
        })
        .collect();
    let json: serde_json::Value = serde_json::from_str(&ok(&[
        "compare",
        "--format",
        "json",
        s(&paths[0]),
        s(&paths[1]),
        "--",
        s(&paths[2]),
    ]))
    .unwrap();
    for m in json["metrics"].as_array().unwrap() {
        if m["name"].as_str().unwrap().contains("per conn") {
            assert!(
                m["a"]["median"].is_null() && m["relative_change"].is_null(),
                "{m}"
            );
            assert_eq!(m["verdict"], "not_applicable", "{m}");
        }
    }
    // The trials measured nothing: flagged so, their rate n/a (not `0 [0 – 0]`).
    for side in ["a", "b"] {
        for t in json[side]["trials"].as_array().unwrap() {
            assert!(
                t["flags"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|f| f == "nothing measured"),
                "{t}"
            );
        }
    }
    let rate = json["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "connections/s")
        .unwrap();
    assert!(
        rate["a"]["median"].is_null() && rate["a_excluded"]["median"].is_null(),
        "{rate}"
    );
    let text = ok(&["compare", s(&paths[0]), s(&paths[1]), "--", s(&paths[2])]);
    let row = text
        .lines()
        .find(|l| l.contains("connections/s (peak phase"))
        .unwrap();
    assert!(!row.contains("0 [0 – 0]") && row.contains("n/a"), "{row}");
    let rec = RunRecord::read(&paths[0]).unwrap();
    assert_eq!(
        (rec.phases[0].cpm, rec.phases[0].achieved_per_sec),
        (None, None)
    );
    let text = ok(&["report", s(&paths[0])]);
    assert!(rec.phases[0].cpu.load.us_per_conn().is_none());
    assert!(
        text.contains("nothing measured — no connection succeeded") && !text.contains("CPM"),
        "{text}"
    );
}

#[test]
fn plot_writes_svg_with_labelled_axes_and_refuses_unknown_formats() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("spectrum.svg");
    ok(&["plot", s(&golden()), "-o", s(&out)]);
    let svg = std::fs::read_to_string(&out).unwrap();
    assert!(
        svg.contains("latency (µs, log scale)")
            && svg.contains("99.9%")
            && svg.contains("golden handshake"),
        "{svg:.400}"
    );
    let out = dir.path().join("timeline.png");
    ok(&["plot", s(&golden()), "-o", s(&out), "--kind", "timeline"]);
    assert!(std::fs::read(&out).unwrap().starts_with(b"\x89PNG"));
    let o = connstorm(&["plot", s(&golden()), "-o", s(&dir.path().join("x.jpg"))]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let o = connstorm(&[
        "plot",
        s(&golden()),
        "-o",
        s(&dir.path().join("x.svg")),
        "--kind",
        "ab",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    // `plot A -- B --kind ab -o ab.svg`: the options after `--` are read as options. B is
    // another run (the same run on both sides is refused).
    let mut other = RunRecord::read(&golden()).unwrap();
    other.run.started_unix_ms = other.run.started_unix_ms.map(|t| t + 1);
    let other = other.write_atomic(&dir.path().join("b")).unwrap();
    let out = dir.path().join("ab.svg");
    ok(&[
        "plot",
        s(&golden()),
        "--",
        s(&other),
        "--kind",
        "ab",
        "-o",
        s(&out),
    ]);
    assert!(std::fs::read_to_string(&out).unwrap().contains("A: golden"));
}

/// A short bench (a 0.8 s peak after a 0.2 s warm-up, a 1.2 s latency phase) keeps every
/// measured moment in one timeline row, partial ones with their real length, so every phase has
/// a row and `plot --kind timeline` draws them.
#[test]
fn a_two_second_bench_has_timeline_rows_in_every_phase() {
    let _x = testkit::exclusive();
    let dir = tempfile::tempdir().unwrap();
    let o = connstorm(&[
        "bench",
        "--netns",
        "--duration",
        "2s",
        "--out",
        s(dir.path()),
    ]);
    assert!(o.status.code() == Some(0), "{}", stderr(&o));
    let file = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "json"))
        .expect("a record");
    let rec = RunRecord::read(&file).unwrap();
    assert_eq!(rec.phases.len(), 2, "peak and latency");
    for p in &rec.phases {
        assert!(!p.timeline.is_empty(), "{}: no timeline row", p.name);
        // The rows tile the measured part: lengths add up to it, the last ends with it.
        let covered: f64 = p.timeline.iter().map(|r| r.length_secs).sum();
        assert!(
            (covered - p.measured_secs).abs() < 0.02,
            "{}: rows cover {covered} s of {} s measured",
            p.name,
            p.measured_secs
        );
        let last = p.timeline.last().unwrap();
        assert!((last.t_secs - p.measured_secs).abs() < 0.02, "{}", p.name);
        assert!(
            last.is_partial(),
            "{}: {} s measured ends with a partial row",
            p.name,
            p.measured_secs
        );
        assert!(
            p.timeline.iter().map(|r| r.successes).sum::<u64>() > 0,
            "{}",
            p.name
        );
    }
    let svg = dir.path().join("t.svg");
    ok(&["plot", s(&file), "--kind", "timeline", "-o", s(&svg)]);
    let svg = std::fs::read_to_string(&svg).unwrap();
    let rows: usize = rec.phases.iter().map(|p| p.timeline.len()).sum();
    assert_eq!(svg.matches("<circle").count(), rows, "a dot per row");
}

/// `merge -o` never replaces a device or a symlink with its output file.
#[test]
fn merge_refuses_an_output_that_is_not_a_regular_file() {
    use std::os::unix::fs::FileTypeExt;
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("link.json");
    let target = dir.path().join("target.json");
    std::fs::write(&target, "keep").unwrap();
    std::os::unix::fs::symlink(&target, &link).unwrap();
    for out in [Path::new("/dev/full"), link.as_path()] {
        let o = connstorm(&["merge", s(&golden()), "-o", s(out)]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(stderr(&o).contains("not a regular file"), "{}", stderr(&o));
    }
    assert!(std::fs::metadata("/dev/full")
        .unwrap()
        .file_type()
        .is_char_device());
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
}

// ---- `merge` and `report` on multi-host records: bad input, end to end -------------------

/// A load record of segment `index/count` as `load --segment --start-at --out` writes it, made
/// from the example's open-loop phase; each segment in a namespace of its own.
fn segment_record(index: u32, count: u32) -> RunRecord {
    use results::record::{NetnsIdentity, Role, SegmentInfo};
    let mut r = RunRecord::example();
    r.role = Role::Load;
    r.run.command = "load".into();
    let mut p = r.phase("latency").unwrap().clone();
    p.name = "load".into();
    p.server = None;
    p.cpu.server = None;
    let start = p.start_unix_ms.unwrap();
    r.phases = vec![p];
    r.label = format!("load-{index}of{count}");
    let whole = serde_json::json!({
        "targets": ["10.0.0.1:9000"],
        "pattern": {"kind": "open", "rate_per_sec": 6400.0, "arrival": "poisson"},
        "duration": {"secs": 3, "nanos": 0},
        "warmup": {"secs": 0, "nanos": 0},
        "cpus": [1],
        "close": "rst",
        "sources": [],
        "connect_timeout": {"secs": 3, "nanos": 0},
        "expect_bytes": null,
        "max_in_flight": 4096,
        "late_threshold": {"secs": 0, "nanos": 1_000_000},
        "http": null
    });
    r.config = whole.clone();
    r.segment = Some(SegmentInfo {
        index,
        count,
        planned_start_unix_ms: Some(start),
        real_start_unix_ms: start,
        clock_sync: "synchronized".into(),
        clock_offset_ms: Some(0.2),
        clock_source: "chronyc tracking".into(),
        whole_config: Some(whole),
    });
    r.counters_netns = Some(NetnsIdentity {
        inode: 4_026_532_100 + u64::from(index),
        boot_id: Some(format!("boot-{index}")),
        hostname: Some(format!("gen-{index}")),
    });
    r
}

fn write_records(dir: &Path, recs: &[(&str, &RunRecord)]) -> Vec<PathBuf> {
    recs.iter()
        .map(|(name, r)| {
            let p = dir.join(name);
            std::fs::write(&p, r.to_json()).unwrap();
            p
        })
        .collect()
}

/// Runs `merge` on `files`, expects exit 2 and one line of error; returns it.
fn merge_refused(files: &[PathBuf]) -> String {
    let out = tempfile::tempdir().unwrap();
    let mut args = vec!["merge".to_string()];
    args.extend(files.iter().map(|f| s(f).to_string()));
    args.extend(["-o".into(), s(&out.path().join("m.json")).to_string()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = connstorm(&args);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(
        !out.path().join("m.json").exists(),
        "no merged record after a refusal"
    );
    err
}

#[test]
fn merge_bad_input_overlapping_segments_name_both_files() {
    let dir = tempfile::tempdir().unwrap();
    // Two generators (different hosts) that both ran segment 0/2.
    let (a, mut b) = (segment_record(0, 2), segment_record(0, 2));
    b.host.hostname = Some("another-generator".into());
    let f = write_records(dir.path(), &[("a.json", &a), ("b.json", &b)]);
    let err = merge_refused(&f);
    assert!(
        err.contains(&format!(
            "segments overlap: {} and {} are both segment 0/2",
            s(&f[0]),
            s(&f[1])
        )),
        "{err}"
    );
}

#[test]
fn merge_bad_input_missing_segments_name_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (segment_record(0, 4), segment_record(2, 4));
    let f = write_records(dir.path(), &[("a.json", &a), ("b.json", &b)]);
    let err = merge_refused(&f);
    assert!(
        err.contains(&format!(
            "segments missing: 1, 3 of 0..3 (the files give {}=0, {}=2)",
            s(&f[0]),
            s(&f[1])
        )),
        "{err}"
    );
}

#[test]
fn merge_bad_input_a_segment_out_of_range_is_named_not_reported_missing() {
    let dir = tempfile::tempdir().unwrap();
    let mut recs: Vec<RunRecord> = (0..4).map(|i| segment_record(i, 4)).collect();
    recs[3].segment.as_mut().unwrap().index = 5;
    let named: Vec<(String, &RunRecord)> = recs
        .iter()
        .enumerate()
        .map(|(i, r)| (format!("s{i}.json"), r))
        .collect();
    let f = write_records(
        dir.path(),
        &named
            .iter()
            .map(|(n, r)| (n.as_str(), *r))
            .collect::<Vec<_>>(),
    );
    let err = merge_refused(&f);
    assert!(
        err.contains(&format!(
            "{}: segment 5 of 4 is out of range (0..3)",
            s(&f[3])
        )),
        "{err}"
    );
    assert!(!err.contains("missing"), "{err}");
}

#[test]
fn merge_bad_input_records_of_different_schema_versions_name_both_files() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (segment_record(0, 2), segment_record(1, 2));
    let f = write_records(dir.path(), &[("a.json", &a), ("b.json", &b)]);
    let old = b
        .to_json()
        .replacen("\"schema_version\": 2", "\"schema_version\": 1", 1);
    std::fs::write(&f[1], old).unwrap();
    let err = merge_refused(&f);
    assert!(
        err.contains(&format!(
            "{} is schema 2 but {} is schema 1",
            s(&f[0]),
            s(&f[1])
        )),
        "{err}"
    );
}

#[test]
fn merge_bad_input_histograms_of_different_bounds_are_refused_naming_both_files() {
    let dir = tempfile::tempdir().unwrap();
    let (a, mut b) = (segment_record(0, 2), segment_record(1, 2));
    let p = &mut b.phases[0];
    let h = p
        .histograms
        .decode(results::record::Latency::Handshake)
        .unwrap()
        .unwrap();
    // The same samples in a histogram of another range and precision.
    let mut other = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 10_000_000_000, 2).unwrap();
    for v in h.iter_recorded() {
        other
            .record_n(v.value_iterated_to(), v.count_at_value())
            .unwrap();
    }
    p.histograms.handshake = results::record::encode_histogram(&other);
    let f = write_records(dir.path(), &[("a.json", &a), ("b.json", &b)]);
    let err = merge_refused(&f);
    assert!(
        err.contains(&format!(
            "{} and {}: the handshake histograms of phase \"load\" differ in range or precision",
            s(&f[0]),
            s(&f[1])
        )),
        "{err}"
    );
}

/// A segment whose TLS counts contradict themselves (10^9 full handshakes of 400) is refused,
/// exit 2, naming the file, the phase and the fields, and nothing is written.
#[test]
fn merge_bad_input_tls_counts_that_contradict_each_other_name_the_file_and_fields() {
    let dir = tempfile::tempdir().unwrap();
    let (mut a, mut b) = (segment_record(0, 2), segment_record(1, 2));
    let tls = |full: u64, resumed: u64| results::record::TlsCounts {
        handshakes: 400,
        full,
        resumed,
        tls13: 400,
        ..Default::default()
    };
    a.phases[0].tls = Some(tls(15, 385));
    b.phases[0].tls = Some(tls(1_000_000_000, 0));
    let f = write_records(dir.path(), &[("a.json", &a), ("b.json", &b)]);
    let err = merge_refused(&f);
    assert!(
        err.contains(&format!(
            "{}: phase \"load\": the TLS counts contradict each other: tls.full 1000000000 + tls.resumed 0 ≠ tls.handshakes 400",
            s(&f[1])
        )),
        "{err}"
    );
    assert!(!err.contains(s(&f[0])), "{err}");
    // More TLS handshakes than successes without --http (each would be a success).
    let successes = b.phases[0].successes;
    b.phases[0].tls = Some(results::record::TlsCounts {
        handshakes: successes + 1,
        full: successes + 1,
        tls13: successes + 1,
        ..Default::default()
    });
    b.phases[0].attempts = successes + 1;
    let f = write_records(dir.path(), &[("a.json", &a), ("b.json", &b)]);
    let err = merge_refused(&f);
    assert!(
        err.contains(&format!(
            "{}: phase \"load\": the TLS counts contradict each other: tls.handshakes {} > successes {successes}",
            s(&f[1]),
            successes + 1
        )),
        "{err}"
    );
}

/// Two unrelated load records without `--segment` were refused as "segments overlap … both
/// segment 0/1; give each generator its own --segment".
#[test]
fn merge_bad_input_records_that_are_not_segments_are_not_called_overlapping() {
    let dir = tempfile::tempdir().unwrap();
    let (mut a, mut b) = (segment_record(0, 2), segment_record(1, 2));
    a.segment = None;
    b.segment = None;
    let f = write_records(dir.path(), &[("L0.json", &a), ("L1.json", &b)]);
    let err = merge_refused(&f);
    assert!(
        err.contains(&format!(
            "{} and {} are not segments of one run: neither was run with --segment, so each is a whole run by itself; merge joins the shares of one multi-host run: run every generator with `--segment K/N` (K = 0..N-1, the same N) and the same `--start-at`, then merge their records",
            s(&f[0]),
            s(&f[1])
        )),
        "{err}"
    );
    assert!(!err.contains("overlap"), "{err}");
}

/// `merge` said "8000.0 /s (480000 /min)": its summary line uses the one number format.
#[test]
fn merge_prints_its_rate_in_the_one_number_format() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (segment_record(0, 2), segment_record(1, 2));
    let f = write_records(dir.path(), &[("a.json", &a), ("b.json", &b)]);
    let out = dir.path().join("m.json");
    let o = connstorm(&["merge", s(&f[0]), s(&f[1]), "-o", s(&out)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let m = RunRecord::read(&out).unwrap();
    let p = &m.phases[0];
    let line = format!(
        "connstorm merge: phase load: {} successes in {} s: {} CPM = {} conn/s",
        results::numfmt::count(p.successes),
        results::numfmt::fixed(p.measured_secs, 3),
        results::numfmt::fixed_opt(p.cpm, 0),
        results::numfmt::fixed_opt(p.achieved_per_sec, 0)
    );
    assert!(
        stderr(&o).lines().any(|l| l == line),
        "{line:?} in:\n{}",
        stderr(&o)
    );
    assert!(
        p.successes >= 1_000,
        "a count with a separator: {}",
        p.successes
    );
    assert!(
        !stderr(&o).contains(" /s") && !stderr(&o).contains("/min"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn merge_bad_input_segments_of_another_run_name_both_files_and_the_setting() {
    let dir = tempfile::tempdir().unwrap();
    let (a, mut b) = (segment_record(0, 2), segment_record(1, 2));
    b.segment.as_mut().unwrap().whole_config.as_mut().unwrap()["pattern"]["rate_per_sec"] =
        serde_json::json!(12800.0);
    let f = write_records(dir.path(), &[("a.json", &a), ("b.json", &b)]);
    let err = merge_refused(&f);
    assert!(
        err.contains(&format!(
            "{} and {} are not segments of one run: the whole run's --rate is 6,400/s in the first and 12,800/s in the second",
            s(&f[0]),
            s(&f[1])
        )),
        "{err}"
    );
}

#[test]
fn merge_bad_input_a_server_record_from_another_time_window_is_refused() {
    use results::record::{Role, ServerSide, WorkerAccepts};
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (segment_record(0, 2), segment_record(1, 2));
    let mut srv = RunRecord::example();
    srv.role = Role::Server;
    srv.phases.truncate(1);
    srv.phases[0].server = Some(ServerSide {
        workers: vec![WorkerAccepts {
            cpu: 0,
            accepted: 7,
            cpu_run_ns: None,
        }],
        ..ServerSide::default()
    });
    // A day before the generators.
    srv.run.started_unix_ms = Some(srv.run.started_unix_ms.unwrap() - 86_400_000);
    let f = write_records(
        dir.path(),
        &[("a.json", &a), ("b.json", &b), ("srv.json", &srv)],
    );
    let err = merge_refused(&f);
    assert!(
        err.contains(&format!(
            "{} measured 2026-11-28T22:15:03.250Z – 2026-11-28T22:15:10.750Z but ",
            s(&f[2])
        )) && err.contains("the server record and the load records do not overlap in time"),
        "{err}"
    );
}

/// `report` of a `server --out` record shows the accept server: accepts per worker, the rate,
/// errors and back-offs, the namespace's counters and the cross-check, not "nothing measured".
#[test]
fn report_of_a_server_record_prints_the_accept_server() {
    use results::record::{CrossCheck, Role, ServerSide, WorkerAccepts};
    let dir = tempfile::tempdir().unwrap();
    let mut srv = RunRecord::example();
    srv.role = Role::Server;
    srv.run.command = "server".into();
    srv.phases.truncate(1);
    let p = &mut srv.phases[0];
    *p = results::record::PhaseRecord {
        name: "server".into(),
        measured_secs: 2.5,
        histograms: p.histograms.clone(),
        server: Some(ServerSide {
            workers: vec![
                WorkerAccepts {
                    cpu: 0,
                    accepted: 300,
                    cpu_run_ns: None,
                },
                WorkerAccepts {
                    cpu: 3,
                    accepted: 200,
                    cpu_run_ns: None,
                },
            ],
            accept_errors: [("EMFILE".to_string(), 4)].into(),
            emfile_backoffs: Some(2),
            left_in_queue: Some(0),
            ..ServerSide::default()
        }),
        counters: [("Tcp.PassiveOpens".to_string(), 500)].into(),
        cross_check: Some(CrossCheck {
            server_accepted: Some(500),
            kernel_passive_opens: Some(500),
            agree: true,
            note: "whole run".into(),
            ..CrossCheck::default()
        }),
        ..Default::default()
    };
    // The example's histograms hold samples; a server record's are empty.
    let empty = results::record::new_latency_histogram();
    p.histograms = results::record::Histograms::encode(&empty, &empty, None);
    let f = write_records(dir.path(), &[("srv.json", &srv)]);
    let text = ok(&["report", s(&f[0])]);
    assert!(!text.contains("nothing measured"), "{text}");
    for want in [
        "phase server: accept server, 2 workers, 2.500 s",
        "accepted 500 in 2.500 s = 200.0 conn/s (12,000 CPM) averaged over the server's whole run, idle time included (the load records' rates are those of the load); accept errors: EMFILE 4; EMFILE/ENFILE back-offs 2; left in the accept queues at stop 0",
        "Tcp.PassiveOpens +500",
        "cross-check: server accepted 500, kernel PassiveOpens 500: agree",
    ] {
        assert!(text.contains(want), "missing {want:?} in:\n{text}");
    }
    let row = |cpu: &str, n: &str, rate: &str, share: &str| {
        text.lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>() == [cpu, n, rate, share])
    };
    assert!(row("0", "300", "120.0", "60.0%"), "{text}");
    assert!(row("3", "200", "80.0", "40.0%"), "{text}");
}

/// Files people bring: a FIFO, `/dev/zero` or a directory given where a record, certificate,
/// key, CA, snapshot or kernel config is read is refused at once with exit 2 naming the file
/// (a FIFO hung `report`, `compare`, `merge`, `plot` and `server --cert` for ever; `/dev/zero`
/// as `--cert`, `--key` or `--ca` grew the process by ~0.6 GB/s until it was killed).
#[test]
fn files_people_bring_fifos_devices_and_directories_are_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo.pem");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    let tmp = dir.path().to_str().unwrap();
    let good = golden();
    // A real certificate beside each bad file (the files are read before either is parsed).
    let cert = dir.path().join("cert.pem");
    let o = connstorm(&[
        "server",
        "--listen",
        "127.0.0.1:0",
        "--tls",
        "--cert-out",
        s(&cert),
        "--duration",
        "10ms",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let (cert, key) = (s(&cert).to_string(), s(&cert).to_string());
    let svg = format!("{tmp}/never-written.svg");
    let merged = format!("{tmp}/never-written.json");
    for bad in [s(&fifo), "/dev/zero", tmp] {
        let cases: Vec<Vec<&str>> = vec![
            vec!["report", bad],
            vec!["compare", bad, "--", s(&good)],
            vec!["merge", bad, s(&good), "-o", &merged],
            vec!["plot", bad, "-o", &svg],
            vec![
                "server",
                "--listen",
                "127.0.0.1:0",
                "--tls",
                "--cert",
                bad,
                "--key",
                &key,
            ],
            vec![
                "server",
                "--listen",
                "127.0.0.1:0",
                "--tls",
                "--cert",
                &cert,
                "--key",
                bad,
            ],
            vec![
                "load",
                "--target",
                "127.0.0.1:9",
                "--tls",
                "--ca",
                bad,
                "--rate",
                "1/s",
                "--duration",
                "1s",
            ],
            vec!["tune", "kernel", "--config", bad],
        ];
        for args in cases {
            let mut cmd = Command::new(env!("CARGO_BIN_EXE_connstorm"));
            cmd.args(&args);
            let (code, _, err) =
                testkit::Piped::spawn(&mut cmd).wait(std::time::Duration::from_secs(20));
            assert_eq!(code, Some(2), "{args:?}: {err}");
            assert!(
                err.contains(bad)
                    && (err.contains("not a regular file") || err.contains("directory")),
                "{args:?}: {err}"
            );
        }
    }
}

/// The terminal: a report (text or HTML) and `tune presets` to a full stdout (`> /dev/full`)
/// exit 1 saying stdout could not be written; the bare "No space left on device (os error 28)"
/// named no file and read like a full disk under --out.
#[test]
fn the_terminal_a_full_stdout_is_named_in_the_error() {
    let g = golden();
    for args in [
        &["report", s(&g)][..],
        &["report", "--format", "html", s(&g)],
        &["tune", "presets"],
    ] {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let o = Command::new(env!("CARGO_BIN_EXE_connstorm"))
            .args(args)
            .stdout(full)
            .output()
            .unwrap();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.contains("cannot write to stdout: No space left on device"),
            "{args:?}: {err}"
        );
    }
}

/// Files people bring: a hand-edited record whose TLS counts contradict each other (`100
/// handshakes: 5 full, 0 resumed`) was reported, compared and plotted as measured; merge refused
/// it. Now every record command refuses it (exit 2, one line naming the file, the phase and the
/// fields), and the consistent record still reads.
#[test]
fn a_record_with_contradictory_tls_counts_is_refused_by_every_record_command() {
    let dir = tempfile::tempdir().unwrap();
    let mut rec = RunRecord::example();
    let p = &mut rec.phases[0];
    let n = p.successes;
    p.http = None;
    p.tls = Some(results::record::TlsCounts {
        handshakes: n,
        full: n,
        tls13: n,
        ..Default::default()
    });
    let good = dir.path().join("good.json");
    std::fs::write(&good, rec.to_json()).unwrap();
    ok(&["report", good.to_str().unwrap()]);
    rec.phases[0].tls.as_mut().unwrap().full = n / 20;
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, rec.to_json()).unwrap();
    let (g, b) = (good.to_str().unwrap(), bad.to_str().unwrap());
    let svg = dir.path().join("x.svg");
    for args in [
        vec!["report", b],
        vec!["compare", "--a", g, "--b", b],
        vec!["plot", b, "-o", svg.to_str().unwrap()],
    ] {
        let o = connstorm(&args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.contains(&format!(
                "bad.json: phase {:?}: the TLS counts contradict each other: tls.full {} + tls.resumed 0 ≠ tls.handshakes {n}",
                rec.phases[0].name,
                n / 20
            )),
            "{args:?}: {err}"
        );
        assert!(stdout(&o).is_empty(), "{args:?}: nothing reported");
    }
    assert!(!svg.exists());
}

/// The terminal and files: `report -o FIFO` and `compare -o FIFO` with no reader blocked in
/// open(2) forever. Refused at once (exit 2, one line naming -o and the FIFO); with a reader
/// the report comes through it.
#[test]
fn report_and_compare_to_a_fifo_without_a_reader_end_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("out.fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    let (g, f) = (golden(), fifo.to_str().unwrap().to_string());
    let g = g.to_str().unwrap();
    let mut b = RunRecord::read(&golden()).unwrap();
    b.run.started_at = "2026-11-29T23:15:03Z".into();
    b.run.started_unix_ms = b.run.started_unix_ms.map(|m| m + 3_600_000);
    let bp = dir.path().join("b.json");
    std::fs::write(&bp, b.to_json()).unwrap();
    for args in [
        vec!["report", g, "-o", &f],
        vec!["compare", "--a", g, "--b", bp.to_str().unwrap(), "-o", &f],
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_connstorm"))
            .args(&args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let start = std::time::Instant::now();
        while child.try_wait().unwrap().is_none() {
            if start.elapsed() > std::time::Duration::from_secs(20) {
                child.kill().unwrap();
                child.wait().unwrap();
                panic!("{args:?} still blocked on the FIFO after 20 s");
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let o = child.wait_with_output().unwrap();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.contains("a FIFO that no process reads"),
            "{args:?}: {err}"
        );
    }
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
    };
    for _ in 0..100 {
        let o = connstorm(&["report", g, "-o", &f]);
        if o.status.success() {
            break;
        }
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let text = reader.join().unwrap();
    assert!(text.starts_with("== run golden"), "{text}");
}

/// Files people bring, as outputs: `report`, `compare` and `plot -o DIR` read and rendered
/// everything, then exited 1 ("Is a directory"); a missing directory (`-o nodir/x`) or one where
/// no file can be made (`/proc`, where access(2) says yes to root) the same, and `server
/// --cert-out`, `scale --plot`, `report --hlog`, `k8s render --out` and `man --out` said it as
/// an I/O error. Every output path is refused up front: exit 2, one line naming the option and
/// what to give, nothing on stdout and nothing written.
#[test]
fn files_people_bring_an_output_path_that_cannot_be_written_is_refused_up_front() {
    let dir = tempfile::tempdir().unwrap();
    let d = s(dir.path());
    let g = golden();
    let g = s(&g);
    let missing = format!("{d}/no-such-dir/out.txt");
    let missing_svg = format!("{d}/no-such-dir/out.svg");
    let is_dir = |opt: &str| {
        format!(
            "connstorm: error: {opt} {d}: is a directory: name a file to write (nothing was run)"
        )
    };
    let no_dir = |opt: &str, p: &str| {
        format!("connstorm: error: {opt} {p}: directory {d}/no-such-dir does not exist: create it, or give a path in an existing directory (nothing was run)")
    };
    let server = |cert_out| {
        vec![
            "server",
            "--listen",
            "127.0.0.1:0",
            "--tls",
            "--cert-out",
            cert_out,
            "--duration",
            "10ms",
        ]
    };
    let cases: Vec<(Vec<&str>, String)> = vec![
        (vec!["report", g, "-o", d], is_dir("-o")),
        (vec!["report", g, "-o", &missing], no_dir("-o", &missing)),
        (vec!["compare", g, "--", g, "-o", d], is_dir("-o")),
        (
            vec!["compare", g, "--", g, "-o", &missing],
            no_dir("-o", &missing),
        ),
        (vec!["plot", g, "-o", d], is_dir("-o")),
        (
            vec!["plot", g, "-o", &missing_svg],
            no_dir("-o", &missing_svg),
        ),
        (vec!["merge", g, "-o", d], is_dir("-o")),
        (vec!["merge", g, "-o", &missing], no_dir("-o", &missing)),
        (server(d), is_dir("--cert-out")),
        (
            vec!["scale", "--dry-run", "--plot", &missing_svg],
            no_dir("--plot", &missing_svg),
        ),
    ];
    for (args, want) in cases {
        let o = connstorm(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert_eq!(stderr(&o).trim_end(), want, "{args:?}");
        assert_eq!(o.stdout, b"", "{args:?}: refused before any output");
    }
    // Where no file can be made: /proc, for every file and directory output.
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["report", g, "-o", "/proc/connstorm.txt"],
            "-o /proc/connstorm.txt: cannot write in /proc (",
        ),
        (
            vec!["compare", g, "--", g, "-o", "/proc/connstorm.txt"],
            "-o /proc/connstorm.txt: cannot write in /proc (",
        ),
        (
            vec!["plot", g, "-o", "/proc/connstorm.svg"],
            "-o /proc/connstorm.svg: cannot write in /proc (",
        ),
        (
            vec!["merge", g, "-o", "/proc/connstorm.json"],
            "-o /proc/connstorm.json: cannot write in /proc (",
        ),
        (
            vec!["report", g, "--hlog", "/proc/connstorm"],
            "--hlog /proc/connstorm: cannot write in /proc (",
        ),
        (
            vec!["man", "--out", "/proc/connstorm"],
            "--out /proc/connstorm: cannot write in /proc (",
        ),
        (
            vec![
                "k8s",
                "render",
                "--clients",
                "1",
                "--target",
                "10.0.0.1:80",
                "--out",
                "/proc/connstorm",
            ],
            "--out /proc/connstorm: cannot write in /proc (",
        ),
        (
            server("/proc/c.pem"),
            "--cert-out /proc/c.pem: cannot write in /proc (",
        ),
    ];
    for (args, want) in cases {
        let o = connstorm(&args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.starts_with(&format!("connstorm: error: {want}")),
            "{args:?}: {err}"
        );
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert_eq!(o.stdout, b"", "{args:?}");
    }
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "nothing written"
    );
}

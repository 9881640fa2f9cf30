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
        text.contains(&format!("{} CPM", results::numfmt::fixed(phase.cpm, 0))),
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
                p.achieved_per_sec = p.successes as f64 / p.measured_secs;
                p.cpm = p.achieved_per_sec * 60.0;
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
                p.achieved_per_sec = 0.0;
                p.cpm = 0.0;
                // Every attempt failed: no handshake sample.
                p.failures = [("ETIMEDOUT".to_string(), p.attempts)].into();
                let empty =
                    results::histogram::encode(&results::histogram::new_latency_histogram());
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
    let rec = RunRecord::read(&paths[0]).unwrap();
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

//! Which CPUs serve and which load in `bench`, `sweep` and `ab`: explicit lists, `auto` (the
//! placement planner), or a default split of the CPUs this process may use.

use anyhow::Context;

use crate::bad_input;
use common::units;

/// The CPUs [`pick_cpus`] chose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Picked {
    /// CPUs of the server workers (empty with an external target).
    pub server: Vec<usize>,
    /// CPUs of the load workers.
    pub load: Vec<usize>,
    /// The placement planner's notes with `auto` (why a CPU was or was not chosen), for the
    /// caller to show.
    pub notes: Vec<String>,
}

/// Picks server and load CPUs: explicit lists win; `auto` asks the placement planner
/// (tuning::placement); otherwise the first third (at least one) of the allowed CPUs serve and the
/// rest load.
///
/// # Errors
/// Bad input when a list does not parse, or names CPUs this process may not use.
pub fn pick_cpus(
    server: Option<&str>,
    load: Option<&str>,
    external: bool,
) -> anyhow::Result<Picked> {
    let allowed = allowed_cpus();
    let auto = server == Some("auto") || load == Some("auto");
    let mut notes = Vec::new();
    let planned = if auto {
        let asked: Vec<&str> = [("--server-cpus auto", server), ("--load-cpus auto", load)]
            .iter()
            .filter(|(_, v)| *v == Some("auto"))
            .map(|(name, _)| *name)
            .collect();
        let (p, n) = auto_placement(&allowed, external, &asked.join(" "))?;
        notes = n;
        Some(p)
    } else {
        None
    };
    let parse = |what: &str,
                 s: Option<&str>,
                 planned: Option<&Vec<usize>>|
     -> anyhow::Result<Option<Vec<usize>>> {
        match s {
            None => Ok(None),
            Some("auto") => Ok(planned.cloned()),
            Some(s) => {
                let l = units::parse_cpus(s).map_err(|e| bad_input(format!("{what}: {e}")))?;
                common::cpulist::check_option(what, &l).map_err(bad_input)?;
                Ok(Some(l))
            }
        }
    };
    let server = parse("--server-cpus", server, planned.as_ref().map(|p| &p.0))?;
    let load = parse("--load-cpus", load, planned.as_ref().map(|p| &p.1))?;
    if external {
        let load = load.unwrap_or_else(|| allowed.clone());
        return Ok(Picked {
            server: Vec::new(),
            load,
            notes,
        });
    }
    let n_server = (allowed.len() / 3).max(1);
    let server = server.unwrap_or_else(|| allowed[..n_server.min(allowed.len())].to_vec());
    let load = load.unwrap_or_else(|| {
        let rest: Vec<usize> = allowed
            .iter()
            .copied()
            .filter(|c| !server.contains(c))
            .collect();
        if rest.is_empty() {
            server.clone()
        } else {
            rest
        }
    });
    Ok(Picked {
        server,
        load,
        notes,
    })
}

/// `bench --whole-machine`: every CPU this process may use serves and loads (one server worker
/// and one load worker each), so the softirq work of a connection stays on the CPU that
/// raised it, and `--baseline`'s floor takes its whole-machine shape (the sets overlap).
pub fn whole_machine() -> Picked {
    let all = allowed_cpus();
    Picked {
        notes: vec![format!(
            "whole machine: one server worker and one load worker on each of CPUs {}",
            common::cpulist::format(&all)
        )],
        server: all.clone(),
        load: all,
    }
}

/// The planner's (server, load) CPUs and its notes.
type Planned = ((Vec<usize>, Vec<usize>), Vec<String>);

/// `asked` names the options that said `auto` (`--server-cpus auto --load-cpus auto`), for
/// the error.
fn auto_placement(allowed: &[usize], external: bool, asked: &str) -> anyhow::Result<Planned> {
    let topo = tuning::host::Topology::read(std::path::Path::new("/"))
        .context("read the CPU topology for `auto`")?;
    let n = allowed.len();
    let (server_workers, load_workers) = if external {
        (0, n.max(1))
    } else {
        ((n / 3).max(1), (n - (n / 3).max(1)).max(1))
    };
    let req = tuning::advice::PlacementRequest {
        server_workers,
        load_workers,
        allowed: Some(allowed.to_vec()),
        ..tuning::advice::PlacementRequest::default()
    };
    let p = tuning::advice::place_cpus(&topo, &req).map_err(|e| {
        let one = allowed.first().copied().unwrap_or(0);
        bad_input(format!(
            "{asked}: {e}; give the CPUs yourself, e.g. `--server-cpus {one} --load-cpus {one}` \
             (server and load share CPU {one}; `connstorm tune placement` shows the layout), or \
             let this process use more CPUs (its affinity mask allows {}: taskset/cpuset)",
            common::cpulist::format(allowed)
        ))
    })?;
    Ok((
        (p.server, p.load),
        p.notes.iter().map(|n| format!("placement: {n}")).collect(),
    ))
}

fn allowed_cpus() -> Vec<usize> {
    Some(common::cpulist::usable())
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| vec![0])
}

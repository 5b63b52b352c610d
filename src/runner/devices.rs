//! What a framework's first worker (its probe) says about the devices it runs on: the run
//! records its versions and settings, and which of the targets asked for (or reported) are
//! available; torch's `xla:N` devices are reported by a worker of the torch-xla stack.

use std::sync::atomic::AtomicBool;

use anyhow::Result;

use super::workers::case_worker;
use super::{Event, EventSink, RunConfig};
use crate::model::{DeviceInfo, Framework, FrameworkInfo, RunInfo, Target};
use crate::store::Store;
use crate::worker::{self, Failure, WorkerSpec};

/// Records what a framework's first worker said (`h`, its hello): versions, threads and
/// settings in the run's info, and each target asked for (or reported) with its availability.
/// `xla` adds the `xla:N` devices the torch-xla stack's worker reported ([`xla_reported`]).
/// Returns the available targets, or `None` when the framework failed to import (recorded).
///
/// Errors: the store's.
#[allow(clippy::too_many_arguments)]
pub(super) fn framework_ready(
    store: &mut Store,
    run_id: i64,
    info: &mut RunInfo,
    cfg: &RunConfig,
    fw: Framework,
    h: &crate::worker::protocol::Hello,
    xla: &[(Target, String)],
    sink: &mut dyn EventSink,
) -> Result<Option<Vec<Target>>> {
    info.python_version = h.python.clone();
    info.python_executable = h.python_executable.clone();
    let fwinfo = FrameworkInfo {
        version: h.framework_version.clone(),
        import_error: h.import_error.as_ref().map(|e| format!("{}: {}", e.error_type, e.message)),
        packages: h.packages.clone(),
        threads: h.threads,
        settings: h.settings.clone(),
    };
    info.frameworks.insert(fw, fwinfo.clone());
    store.update_run_info(run_id, info)?;
    if let Some(err) = fwinfo.import_error {
        sink.event(&Event::FrameworkFailed { framework: fw, error: err });
        return Ok(None);
    }
    // Devices: those asked for (absent ones are unavailable), or all it reports.
    let mut reported = reported_devices(h);
    reported.extend(xla.iter().cloned());
    // Vulkan devices are the machine's, not the framework's: the loader is asked directly.
    let vulkan = vulkan_reported(cfg);
    if let Ok(found) = &vulkan {
        reported.extend(found.iter().cloned());
    }
    let wanted: Vec<Target> = match &cfg.devices {
        Some(list) => list.clone(),
        // Every device found, but Vulkan's (lavapipe is a CPU behind a GPU's API): those run when named.
        None => reported.iter().filter(|(d, _)| !d.is_vulkan()).flat_map(|(d, _)| d.in_modes(&cfg.modes)).collect(),
    };
    let mut infos = Vec::new();
    for d in &wanted {
        match reported.iter().find(|(r, _)| *r == d.base()) {
            Some(_) if fw.lacks_mode(d.mode()).is_some() => {
                let detail = fw.lacks_mode(d.mode()).unwrap_or_default();
                sink.event(&Event::DeviceUnavailable {
                    framework: fw,
                    device: d.clone(),
                    detail: detail.clone(),
                    machine_wide: false,
                });
                infos.push(DeviceInfo { framework: fw, device: d.clone(), available: false, detail });
            }
            Some(_) if let Some(Some(why)) = h.routes.get(&route_key(d)).filter(|_| d.mode().is_route()) => {
                // An export route whose converter or runtime this environment lacks.
                infos.push(DeviceInfo { framework: fw, device: d.clone(), available: false, detail: why.clone() });
                sink.event(&Event::DeviceUnavailable {
                    framework: fw,
                    device: d.clone(),
                    detail: why.clone(),
                    machine_wide: false,
                });
            }
            Some((_, detail)) => {
                // A route's runtime, as the worker described it, stands in for the device's detail.
                let route = h.route_details.get(&route_key(d)).filter(|_| d.mode().is_route());
                let detail = match route {
                    // A Vulkan device keeps its own description beside the route's runtime.
                    Some(runtime) if d.is_vulkan() => format!("{runtime} on {detail}"),
                    Some(runtime) => runtime.clone(),
                    None => detail.clone(),
                };
                infos.push(DeviceInfo { framework: fw, device: d.clone(), available: true, detail })
            }
            None => {
                let detail = match (d.is_xla(), fw, &cfg.xla_python) {
                    _ if d.is_vulkan() => match &vulkan {
                        Err(why) => why.clone(),
                        Ok(found) => {
                            let present: Vec<String> = found.iter().map(|(t, _)| t.to_string()).collect();
                            format!("no {} on this machine (Vulkan devices: {})", d.base(), present.join(", "))
                        }
                    },
                    (true, Framework::Torch, None) => "the torch-xla stack's environment could not be set up".into(),
                    (true, Framework::Torch, Some(_)) => format!("torch_xla reports no {d} on this machine"),
                    (true, _, _) => format!("{d} is PyTorch/XLA's device: torch only"),
                    _ => format!("{fw} reports no {d} on this machine"),
                };
                let machine_wide = d.is_vulkan() && vulkan.is_err();
                sink.event(&Event::DeviceUnavailable {
                    framework: fw,
                    device: d.clone(),
                    detail: detail.clone(),
                    machine_wide,
                });
                infos.push(DeviceInfo { framework: fw, device: d.clone(), available: false, detail });
            }
        }
    }
    store.record_devices(run_id, &infos)?;
    sink.event(&Event::FrameworkReady {
        framework: fw,
        version: h.framework_version.clone().unwrap_or_default(),
        devices: infos.iter().filter(|i| i.available).map(|i| i.device.clone()).collect(),
        stacks: crate::model::device_stacks(&infos),
    });
    Ok(Some(infos.iter().filter(|i| i.available).map(|i| i.device.clone()).collect()))
}

/// The key of a route target in a hello's `routes` and `route_details`: the route's name for
/// the worker's own kind of device, the whole target on a Vulkan device (protocol 13).
fn route_key(d: &Target) -> String {
    if d.is_vulkan() { d.to_string() } else { d.mode().as_str().to_string() }
}

/// The Vulkan devices of this machine, each with its description ([`crate::vulkan`]), when
/// the run asks for a `vulkan:N` target (empty otherwise); why there are none otherwise.
fn vulkan_reported(cfg: &RunConfig) -> Result<Vec<(Target, String)>, String> {
    if !cfg.devices.as_ref().is_some_and(|l| l.iter().any(Target::is_vulkan)) {
        return Ok(Vec::new());
    }
    Ok(crate::vulkan::devices()?.into_iter().map(|d| (d.target(), d.describe())).collect())
}

/// The devices a hello reports available, with `native detail` for the record.
fn reported_devices(h: &worker::protocol::Hello) -> Vec<(Target, String)> {
    h.devices
        .iter()
        .filter(|d| d.available)
        .filter_map(|d| {
            d.device.parse::<Target>().ok().map(|dev| (dev, format!("{} {}", d.native, d.detail).trim().to_string()))
        })
        .collect()
}

/// The `xla:N` devices a torch worker in the torch-xla environment reports (started on
/// `spec`'s interpreter, then shut down), each described with the stack's torch version and
/// interpreter, which the run records with the device.
fn xla_devices(spec: &WorkerSpec, cfg: &RunConfig, interrupted: &AtomicBool) -> Result<Vec<(Target, String)>, Failure> {
    let probe = WorkerSpec { device: Target::cpu(), ..spec.clone() };
    let w = worker::spawn(&probe, cfg.start_timeout, interrupted)?;
    let h = w.hello.clone();
    w.shutdown();
    let torch = h.framework_version.clone().unwrap_or_else(|| "not importable".into());
    Ok(reported_devices(&h)
        .into_iter()
        .filter(|(d, _)| d.is_xla())
        .map(|(d, detail)| (d, format!("{detail}; torch {torch}; python {}", h.python_executable)))
        .collect())
}

/// The `xla:N` devices of the torch-xla stack when `fw` is torch and the run asks for one
/// (empty otherwise): its worker started once ([`xla_devices`]) to report them.
///
/// Errors: the worker did not start ([`Failure`]; `Interrupted` on Ctrl-C).
pub(super) fn xla_reported(
    cfg: &RunConfig,
    fw: Framework,
    interrupted: &AtomicBool,
) -> Result<Vec<(Target, String)>, Failure> {
    let asked = cfg.devices.as_ref().and_then(|l| l.iter().find(|d| d.is_xla()));
    match asked {
        Some(xla) if fw == Framework::Torch => xla_devices(&case_worker(cfg, &[], fw, &xla.base()), cfg, interrupted),
        _ => Ok(Vec::new()),
    }
}

//! `mlport env` and the probe half of `mlport list`: the interpreter, each framework's
//! version (or why it is not usable) and the devices it sees, and the installed packages.

use std::collections::BTreeMap;

use super::grid::Grid;
use crate::pyenv::{FrameworkProbe, PythonEnv};
use crate::vulkan::VulkanDevice;

/// `python: PATH (managed)`, newline-terminated.
/// With the managed environment's stack and why it was chosen on a second line.
pub fn python_line(env: &PythonEnv) -> String {
    let mut s = format!("python: {}{}\n", env.python.display(), if env.managed { " (managed)" } else { "" });
    if let Some(c) = &env.stack {
        s.push_str(&format!("stack: {} ({}): {}\n", c.stack, c.stack.lock_path(), c.why));
    }
    s
}

/// One row per probed framework: version or `not usable: ...`, devices, interpreter.
pub fn probe_table(probes: &[FrameworkProbe]) -> String {
    let mut t = Grid::new(["framework", "version", "devices", "python"]);
    for p in probes {
        let version = match &p.version {
            Ok(v) => v.clone(),
            Err(why) => format!("not usable: {why}"),
        };
        t.push([p.framework.to_string(), version, p.devices.join(", "), p.python.clone()]);
    }
    format!("{}\n", t.table())
}

/// The Vulkan devices (`vulkan:N`, docs/vulkan.md): one row each with the device's name,
/// type, Vulkan API version, driver and the shader features that decide which dtypes compile;
/// or one line saying why there are none and how to get one.
pub fn vulkan_table(found: &Result<Vec<VulkanDevice>, String>) -> String {
    match found {
        Err(why) => format!("vulkan: none ({why})\n"),
        Ok(list) => {
            let mut t = Grid::new(["vulkan device", "name", "type", "api", "driver", "shader features"]);
            for d in list {
                t.push([
                    d.target().to_string(),
                    d.name.clone(),
                    d.device_type.clone(),
                    d.api_version.clone(),
                    d.driver.clone(),
                    d.features.join(", "),
                ]);
            }
            format!("{}\n", t.table())
        }
    }
}

/// `packages: a==1 b==2`, newline-terminated; empty when there are none.
pub fn packages_line(packages: &BTreeMap<String, String>) -> String {
    if packages.is_empty() {
        return String::new();
    }
    let list: Vec<String> = packages.iter().map(|(k, v)| format!("{k}=={v}")).collect();
    format!("packages: {}\n", list.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vulkan_devices_render_as_a_table_or_say_why_none() {
        let lavapipe = VulkanDevice {
            index: 0,
            name: "llvmpipe (LLVM 15.0.6, 256 bits)".into(),
            device_type: "cpu".into(),
            api_version: "1.3.230".into(),
            driver: "llvmpipe, Mesa 22.3.6 (LLVM 15.0.6)".into(),
            features: vec!["float16", "float64", "int8", "int16", "int64", "int8_storage", "int16_storage"],
        };
        insta::assert_snapshot!(vulkan_table(&Ok(vec![lavapipe])));
        assert_eq!(
            vulkan_table(&Err("no Vulkan loader on this machine".into())),
            "vulkan: none (no Vulkan loader on this machine)\n"
        );
    }
}

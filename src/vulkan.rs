//! The Vulkan devices of this machine (`vulkan:N`), asked of the Vulkan loader directly
//! (through `ash`, which opens `libvulkan.so.1` at run time): what `mlport env` and `list` show,
//! and what a run records for its `vulkan:N` targets. On a machine without a GPU, Debian's
//! `mesa-vulkan-drivers` gives lavapipe, a conformant Vulkan driver that runs compute shaders
//! on the CPU (docs/vulkan.md).
//!
//! `vulkan:N` is the Nth physical device in the loader's enumeration order, the order IREE's
//! Vulkan driver lists them in (the worker picks the same one).

use std::ffi::CStr;

use ash::vk;
use serde::Serialize;

/// How to get a Vulkan device, said wherever one is missing.
pub const HOW_TO_GET: &str = "install Debian's `libvulkan1` and `mesa-vulkan-drivers` (lavapipe: Vulkan on the CPU) or \
                              a GPU's Vulkan driver";

/// One Vulkan physical device, as its driver describes it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct VulkanDevice {
    /// Its index in the loader's enumeration: the `N` of `vulkan:N`.
    pub index: u32,
    /// The device name (`llvmpipe (LLVM 15.0.6, 256 bits)`).
    pub name: String,
    /// `cpu` (lavapipe, SwiftShader), `integrated_gpu`, `discrete_gpu`, `virtual_gpu` or `other`.
    pub device_type: String,
    /// The Vulkan API version the device supports (`1.3.230`).
    pub api_version: String,
    /// The driver's name and its own version string (`llvmpipe, Mesa 22.3.6 (LLVM 15.0.6)`;
    /// Vulkan 1.2's `VkPhysicalDeviceDriverProperties`), or the raw driver version number on
    /// older devices.
    pub driver: String,
    /// Shader features that decide which dtypes compile: `float16`, `float64`, `int8`,
    /// `int16`, `int64`, `int8_storage` (8-bit storage buffers), `int16_storage`.
    pub features: Vec<&'static str>,
}

impl VulkanDevice {
    /// The target name, `vulkan:N`.
    pub fn target(&self) -> crate::model::Target {
        format!("vulkan:{}", self.index).parse().expect("vulkan:N parses")
    }

    /// One line for a run's device record and `mlport env`: name, type, API, driver, features.
    pub fn describe(&self) -> String {
        format!(
            "{} ({}; Vulkan {}; driver {}; shader features: {})",
            self.name,
            self.device_type,
            self.api_version,
            self.driver,
            if self.features.is_empty() {
                "none of float16, float64, int8, int16, int64".into()
            } else {
                self.features.join(", ")
            }
        )
    }
}

/// The Vulkan devices present, in the loader's order.
///
/// Errors: why there are none, as a sentence ending in how to get one: no loader
/// (`libvulkan.so.1`), no driver (`vkCreateInstance` fails, e.g. `VK_ICD_FILENAMES` pointing
/// nowhere), or a driver with no device.
pub fn devices() -> Result<Vec<VulkanDevice>, String> {
    // SAFETY: loads the system's Vulkan loader; its entry points are used per the spec below.
    let entry =
        unsafe { ash::Entry::load() }.map_err(|e| format!("no Vulkan loader on this machine ({e}): {HOW_TO_GET}"))?;
    // The newest API this loader offers, up to 1.3 (a 1.0 loader has no vkEnumerateInstanceVersion).
    // SAFETY: a global command of the loaded entry.
    let loader = unsafe { entry.try_enumerate_instance_version() }.ok().flatten().unwrap_or(vk::API_VERSION_1_0);
    let instance_api = loader.min(vk::API_VERSION_1_3);
    let app = vk::ApplicationInfo::default().application_name(c"mlport").api_version(instance_api);
    let create = vk::InstanceCreateInfo::default().application_info(&app);
    // SAFETY: `create` and `app` outlive the call; the instance is destroyed below.
    let instance = unsafe { entry.create_instance(&create, None) }.map_err(|e| {
        let icd = std::env::var("VK_ICD_FILENAMES").map(|v| format!(" with VK_ICD_FILENAMES={v}")).unwrap_or_default();
        format!("the Vulkan loader found no driver (vkCreateInstance: {e}{icd}): {HOW_TO_GET}")
    })?;
    // SAFETY: `instance` is live until destroy_instance.
    let found = unsafe { instance.enumerate_physical_devices() }.map(|pds| {
        pds.into_iter().enumerate().map(|(i, pd)| describe(&instance, instance_api, pd, i as u32)).collect::<Vec<_>>()
    });
    // SAFETY: nothing created from the instance outlives this point.
    unsafe { instance.destroy_instance(None) };
    match found {
        Ok(list) if list.is_empty() => Err(format!("the Vulkan driver reports no device: {HOW_TO_GET}")),
        Ok(list) => Ok(list),
        Err(e) => Err(format!("vkEnumeratePhysicalDevices failed ({e}): {HOW_TO_GET}")),
    }
}

/// The device `vulkan:index`, or why it is not there (a sentence).
///
/// Errors: [`devices`]'s, or an index past the last device (the devices present named).
pub fn device(index: u32) -> Result<VulkanDevice, String> {
    let list = devices()?;
    let names: Vec<String> = list.iter().map(|d| format!("vulkan:{} {}", d.index, d.name)).collect();
    list.into_iter()
        .find(|d| d.index == index)
        .ok_or_else(|| format!("no vulkan:{index} on this machine (present: {})", names.join(", ")))
}

/// One device's description. The `*2` queries (Vulkan 1.1) and their 1.2 structs are used only
/// where both the instance (`instance_api`) and the device support them.
fn describe(instance: &ash::Instance, instance_api: u32, pd: vk::PhysicalDevice, index: u32) -> VulkanDevice {
    // SAFETY: `pd` came from this live instance; the chained structs outlive each call.
    let props = unsafe { instance.get_physical_device_properties(pd) };
    let api = props.api_version;
    let usable = api.min(instance_api);
    let has_11 = usable >= vk::API_VERSION_1_1;
    let has_12 = usable >= vk::API_VERSION_1_2;
    let mut driver_props = vk::PhysicalDeviceDriverProperties::default();
    let driver = if has_12 {
        let mut p2 = vk::PhysicalDeviceProperties2::default().push_next(&mut driver_props);
        unsafe { instance.get_physical_device_properties2(pd, &mut p2) };
        format!("{}, {}", c_text(driver_props.driver_name_as_c_str()), c_text(driver_props.driver_info_as_c_str()))
    } else {
        format!("version {:#x}", props.driver_version)
    };
    let mut f16i8 = vk::PhysicalDeviceShaderFloat16Int8Features::default();
    let mut s8 = vk::PhysicalDevice8BitStorageFeatures::default();
    let mut s16 = vk::PhysicalDevice16BitStorageFeatures::default();
    let mut f2 = vk::PhysicalDeviceFeatures2::default();
    if has_12 {
        f2 = f2.push_next(&mut f16i8).push_next(&mut s8).push_next(&mut s16);
    }
    let base = if has_11 {
        unsafe { instance.get_physical_device_features2(pd, &mut f2) };
        f2.features
    } else {
        unsafe { instance.get_physical_device_features(pd) }
    };
    let on = |b: vk::Bool32| b == vk::TRUE;
    let features: Vec<&'static str> = [
        ("float16", on(f16i8.shader_float16)),
        ("float64", on(base.shader_float64)),
        ("int8", on(f16i8.shader_int8)),
        ("int16", on(base.shader_int16)),
        ("int64", on(base.shader_int64)),
        ("int8_storage", on(s8.storage_buffer8_bit_access)),
        ("int16_storage", on(s16.storage_buffer16_bit_access)),
    ]
    .into_iter()
    .filter_map(|(name, yes)| yes.then_some(name))
    .collect();
    let device_type = match props.device_type {
        vk::PhysicalDeviceType::CPU => "cpu",
        vk::PhysicalDeviceType::INTEGRATED_GPU => "integrated_gpu",
        vk::PhysicalDeviceType::DISCRETE_GPU => "discrete_gpu",
        vk::PhysicalDeviceType::VIRTUAL_GPU => "virtual_gpu",
        _ => "other",
    };
    VulkanDevice {
        index,
        name: c_text(props.device_name_as_c_str()),
        device_type: device_type.into(),
        api_version: format!(
            "{}.{}.{}",
            vk::api_version_major(api),
            vk::api_version_minor(api),
            vk::api_version_patch(api)
        ),
        driver,
        features,
    }
}

fn c_text(s: Result<&CStr, std::ffi::FromBytesUntilNulError>) -> String {
    s.map(|c| c.to_string_lossy().into_owned()).unwrap_or_else(|_| "?".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_device_describes_itself_in_one_line() {
        let d = VulkanDevice {
            index: 1,
            name: "llvmpipe (LLVM 15.0.6, 256 bits)".into(),
            device_type: "cpu".into(),
            api_version: "1.3.230".into(),
            driver: "llvmpipe, Mesa 22.3.6".into(),
            features: vec!["float64", "int64"],
        };
        assert_eq!(d.target().as_str(), "vulkan:1");
        assert_eq!(
            d.describe(),
            "llvmpipe (LLVM 15.0.6, 256 bits) (cpu; Vulkan 1.3.230; driver llvmpipe, Mesa 22.3.6; shader features: \
             float64, int64)"
        );
    }
}

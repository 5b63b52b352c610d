//! Failure classification: decides the failure [`Reason`] (docs/architecture.md, "Words") of a failed
//! case from the error the Python worker reported — qualified exception type, message,
//! phase and harness flag (see `mlport_worker.error_dict`).
//!
//! Method: an ordered list of rules over the exception type's last dotted component and the
//! ASCII-lowercased message; the first rule that matches decides. The rules were written
//! against real messages provoked from NumPy 2.4, PyTorch 2.15, JAX 0.10 and TensorFlow 2.21
//! by `fixtures/capture.py` and stored in `fixtures/errors.json`, which the tests below
//! replay, plus messages quoted in framework issue trackers for devices we could not
//! provoke here (CUDA, MPS, TPU). Plain substring search, no regular expressions.

use crate::model::{Framework, Reason};
use crate::worker::protocol::Phase;

/// An error as the worker reported it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ErrorReport<'a> {
    /// Qualified exception type, `module.QualName`, bare for builtins (`TypeError`).
    pub error_type: &'a str,
    /// The exception message (`str(exc)`, whole up to 65,536 characters); matched ASCII-lowercased.
    pub message: &'a str,
    /// The phase it was raised in; `None` when unknown (an imported test's teardown).
    pub phase: Option<Phase>,
    /// The worker's verdict that the error is mlport's own bug.
    pub harness: bool,
    /// The case ran on a compiled target (`cpu/compiled`): its first call traced and compiled
    /// it (docs/modes.md).
    pub compiled: bool,
}

/// The exception type the worker reports when outputs come back on the host.
const SILENT_FALLBACK: &str = "mlport.SilentFallback";

/// The exception type the worker reports when an export route's exporter refused the function.
const EXPORT_ERROR: &str = "mlport.ExportError";

/// The failure reason for a failed case (docs/architecture.md, "Words"), decided from exception type and
/// message. Rules, in order (the first that matches decides):
///
/// 1. harness flag set ⇒ `harness_error` (`rule_harness`).
/// 2. phase `import` ⇒ `other`: the framework did not import; the core reports that
///    separately (`rule_import`).
/// 3. phase `resolve` with `AttributeError`/`ImportError`/`ModuleNotFoundError` ⇒ `api_missing`,
///    unless a shared library failed to load (`rule_resolve`).
/// 4. `mlport.SilentFallback` ⇒ `silent_fallback` (`rule_silent_fallback`); `mlport.ExportError`
///    (an export route's exporter refused the function) ⇒ `export_error` (`rule_export`).
/// 5. the target device is absent from this process ⇒ `harness_error`: the core should never
///    have sent the case, and the framework is not to blame (`rule_device_unavailable`).
/// 6. out of memory ⇒ `out_of_memory` (`rule_out_of_memory`).
/// 7. signature mismatch (`TypeError`, unexpected keyword argument …) ⇒ `other`
///    (`rule_signature_mismatch`).
/// 8. removed API met at call time ⇒ `api_missing` (`rule_removed_api`).
/// 9. exception types of compilers and tracers (Dynamo, Inductor, JAX tracers) ⇒
///    `compile_error`, whatever the wrapped message says (`rule_compiler_exception`).
/// 10. TensorFlow kernel-registry errors ⇒ `dtype_unsupported` when kernels exist for the
///     device with other dtypes, else `not_implemented` (`rule_tf_kernel_registry`).
/// 11. unambiguous dtype messages ⇒ `dtype_unsupported` (`rule_dtype_specific`).
/// 12. unambiguous missing-kernel/lowering messages ⇒ `not_implemented`
///     (`rule_not_implemented_specific`).
/// 13. compiler messages ⇒ `compile_error` (`rule_compile_message`).
/// 14. a dtype named next to "not supported"-like words ⇒ `dtype_unsupported`
///     (`rule_dtype_generic`).
/// 15. `NotImplementedError`, `UnimplementedError`, XLA `UNIMPLEMENTED`, "not supported on …" ⇒
///     `not_implemented` (`rule_not_implemented_generic`).
/// 16. anything else ⇒ `compile_error` when a compiled target's first call raised it (that call
///     traces and compiles the case; the case counts against the compiler only when the same
///     call passed eagerly), else `other` (`rule_anything_else`).
///
/// Never returns `wrong_result`, `timeout`, `crash` or `recompiles`: those are decided elsewhere
/// (the comparisons, the core's clock and the worker's pipe, the compile count).
pub fn classify(framework: Framework, e: &ErrorReport) -> Reason {
    let ty = short_type(e.error_type);
    let lower = e.message.to_ascii_lowercase();
    let m = lower.as_str();
    let rules: [&dyn Fn() -> Option<Reason>; 16] = [
        &|| rule_harness(e),
        &|| rule_import(e),
        &|| rule_resolve(e, ty, m),
        &|| rule_silent_fallback(e),
        &|| rule_export(e),
        &|| rule_device_unavailable(m),
        &|| rule_out_of_memory(ty, m),
        &|| rule_signature_mismatch(ty, m),
        &|| rule_removed_api(framework, e.phase, ty, m),
        &|| rule_compiler_exception(e.error_type, ty),
        &|| rule_tf_kernel_registry(m),
        &|| rule_dtype_specific(m),
        &|| rule_not_implemented_specific(m),
        &|| rule_compile_message(ty, m),
        &|| rule_dtype_generic(m),
        &|| rule_not_implemented_generic(ty, m),
    ];
    rules.iter().find_map(|rule| rule()).unwrap_or_else(|| rule_anything_else(e))
}

/// Rule 1: the worker flagged the error as mlport's own bug (a `NameError` in catalogue code,
/// a failure building inputs) ⇒ `harness_error`. Example: `NameError: name 'undefined_input'
/// is not defined` with `harness: true`.
fn rule_harness(e: &ErrorReport) -> Option<Reason> {
    e.harness.then_some(Reason::HarnessError)
}

/// Rule 2: phase `import` ⇒ `other`. The framework itself failed to import (e.g.
/// `ImportError: libcudart.so.12: cannot open shared object file`); the core reports that
/// once per worker rather than per case.
fn rule_import(e: &ErrorReport) -> Option<Reason> {
    matches!(e.phase, Some(Phase::Import)).then_some(Reason::Other)
}

/// Rule 3: the function's name did not resolve ⇒ `api_missing`. Example: `AttributeError:
/// module 'jax' has no attribute 'tree_map'` in phase `resolve`. An `ImportError` that says a
/// shared library failed to load (`undefined symbol`, `cannot open shared object file`) is a
/// broken install, not a missing API, and falls through.
fn rule_resolve(e: &ErrorReport, ty: &str, m: &str) -> Option<Reason> {
    let lookup = matches!(ty, "AttributeError" | "ImportError" | "ModuleNotFoundError");
    let broken_library = contains_any(
        m,
        &["cannot open shared object file", "undefined symbol", "dll load failed", "library not loaded"],
    );
    (matches!(e.phase, Some(Phase::Resolve)) && lookup && !broken_library).then_some(Reason::ApiMissing)
}

/// Rule 4: the worker's own verdict that outputs came back on the host ⇒ `silent_fallback`.
/// Example: `mlport.SilentFallback: output on cpu, expected cuda:0`.
fn rule_silent_fallback(e: &ErrorReport) -> Option<Reason> {
    (e.error_type == SILENT_FALLBACK).then_some(Reason::SilentFallback)
}

/// Rule 4b: the worker's export route reports that the exporter (`torch.onnx.export`,
/// `jax2onnx`, `tf2onnx`, `jax.export`) refused the function as `mlport.ExportError` with the
/// exporter's own message (docs/ir-routes.md) ⇒ `export_error`.
fn rule_export(e: &ErrorReport) -> Option<Reason> {
    (e.error_type == EXPORT_ERROR).then_some(Reason::ExportError)
}

/// Rule 5: the target device does not exist in this process ⇒ `harness_error`. A case must
/// never reach an unavailable device (the core reads the worker's device list first), so if
/// one does it is our bug, and it must not count against the framework. Examples:
/// `RuntimeError: Found no NVIDIA driver on your system` (torch on `cuda` without a GPU),
/// `AssertionError: Torch not compiled with XPU enabled`, `RuntimeError: PyTorch is not linked
/// with support for mps devices`, `RuntimeError: Unknown backend: 'gpu' requested, but no
/// platforms that are instances of gpu are present` (JAX), `InvalidArgumentError: Could not
/// satisfy device specification '/job:localhost/replica:0/task:0/device:GPU:0'. … All
/// available devices [/job:localhost/replica:0/task:0/device:CPU:0].` (TensorFlow; when the
/// device *is* available this is a missing kernel, rule 10).
fn rule_device_unavailable(m: &str) -> Option<Reason> {
    const PHRASES: &[&str] = &[
        "found no nvidia driver",
        "torch not compiled with",
        "is not linked with support for",
        "no cuda gpus are available",
        "no cuda-capable device is detected",
        "device type at start of device string",
        "unknown backend",
        "no devices matching that specification",
    ];
    let jax_backend_init = m.contains("backend '") && m.contains("failed to initialize");
    (contains_any(m, PHRASES) || jax_backend_init || tf_requested_device_absent(m)).then_some(Reason::HarnessError)
}

/// Rule 6: out of memory ⇒ `out_of_memory`. By type: `torch.OutOfMemoryError` (also reached as
/// `torch.cuda.OutOfMemoryError`), `MemoryError` and subclasses such as NumPy's
/// `_ArrayMemoryError`, TensorFlow's `ResourceExhaustedError`. By message: `CUDA out of
/// memory. Tried to allocate 2.00 GiB`, XLA's `RESOURCE_EXHAUSTED: Out of memory allocating
/// 35184372088832 bytes.`, TensorFlow's `OOM when allocating tensor with shape[…]`, PyTorch's
/// CPU allocator `DefaultCPUAllocator: can't allocate memory: you tried to allocate … bytes`,
/// `MPS backend out of memory`, `CUDNN_STATUS_ALLOC_FAILED`.
fn rule_out_of_memory(ty: &str, m: &str) -> Option<Reason> {
    const PHRASES: &[&str] = &[
        "out of memory",
        "outofmemory",
        "resource_exhausted",
        "oom when allocating",
        "can't allocate memory",
        "cannot allocate memory",
        "unable to allocate",
        "ran out of memory",
        "failed to allocate",
        "not enough memory",
        "alloc_failed",
    ];
    let by_type = matches!(ty, "OutOfMemoryError" | "ResourceExhaustedError") || ty.ends_with("MemoryError");
    (by_type || contains_any(m, PHRASES)).then_some(Reason::OutOfMemory)
}

/// Rule 7: the call does not fit the function's signature ⇒ `other` (a catalogue mismatch,
/// not a missing API and not a dtype problem, even when the message mentions dtypes).
/// Examples: `TypeError: sum() got an unexpected keyword argument 'bogus'`, TensorFlow's
/// `TypeError: Got an unexpected keyword argument 'bogus'`, PyTorch's `TypeError: sum()
/// received an invalid combination of arguments - got (Tensor, bogus=int), but expected one
/// of: * (Tensor input, *, torch.dtype dtype = None)`, `relu() takes from 1 to 2 positional
/// arguments but 4 were given`.
fn rule_signature_mismatch(ty: &str, m: &str) -> Option<Reason> {
    const PHRASES: &[&str] = &[
        "unexpected keyword argument",
        "invalid combination of arguments",
        "required positional argument",
        "positional argument but",
        "positional arguments but",
        "got multiple values for argument",
        "required keyword-only argument",
        "takes no keyword arguments",
        "incompatible function arguments",
    ];
    (ty == "TypeError" && contains_any(m, PHRASES)).then_some(Reason::Other)
}

/// Rule 8: a removed API met while the case ran ⇒ `api_missing`.
/// - Any phase: the framework's removal stubs, e.g. PyTorch's `RuntimeError: This function was
///   deprecated since version 1.9 and is now removed.` (`torch.symeig`, `torch.qr`), NumPy's
///   ``AttributeError: `np.round_` was removed in the NumPy 2.0 release.``
/// - Phases `setup` and `first_call`: `AttributeError: module 'tensorflow' has no attribute
///   'Session'`, `ModuleNotFoundError: No module named 'jax.experimental.host_callback'`,
///   `ImportError: cannot import name 'x' from 'torch.y'` — only when the module belongs to
///   the case's own framework (a NumPy name missing in a PyTorch case is not PyTorch's API);
///   `'Tensor' object has no attribute 'x'` is not a module and falls through.
fn rule_removed_api(framework: Framework, phase: Option<Phase>, ty: &str, m: &str) -> Option<Reason> {
    if contains_any(m, &["is now removed", "was removed in", "has been removed in"]) {
        return Some(Reason::ApiMissing);
    }
    if !matches!(phase, Some(Phase::Setup | Phase::FirstCall)) {
        return None;
    }
    let module = match ty {
        "AttributeError" => quoted_after(m, "module '").filter(|_| m.contains("' has no attribute '")),
        "ImportError" | "ModuleNotFoundError" => {
            quoted_after(m, "no module named '").or_else(|| quoted_after(m, "' from '"))
        }
        _ => None,
    }?;
    let root = module.split('.').next().unwrap_or(module);
    framework_roots(framework).contains(&root).then_some(Reason::ApiMissing)
}

/// Rule 9: exception types raised by compilers and tracers ⇒ `compile_error`, before any
/// message rule, because they wrap other errors' text. Examples:
/// `torch._dynamo.exc.Unsupported: Data-dependent branching`,
/// `torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised: NotImplementedError: …`,
/// `torch._inductor.exc.InductorError`, `jax.errors.ConcretizationTypeError: Abstract tracer
/// value encountered where concrete value is expected`, `jax.errors.TracerBoolConversionError`,
/// `TracerArrayConversionError`, `TracerIntegerConversionError`, `UnexpectedTracerError`;
/// TensorFlow's graph-building refusals `InaccessibleTensorError: <tf.Tensor …> is out of scope
/// and cannot be used here` and `OperatorNotAllowedInGraphError: Using a symbolic tf.Tensor as a
/// Python bool is not allowed`.
fn rule_compiler_exception(error_type: &str, ty: &str) -> Option<Reason> {
    const TYPES: &[&str] = &[
        "BackendCompilerFailed",
        "InductorError",
        "LoweringException",
        "ConcretizationTypeError",
        "TracerBoolConversionError",
        "TracerArrayConversionError",
        "TracerIntegerConversionError",
        "UnexpectedTracerError",
        "NonConcreteBooleanIndexError",
        "InaccessibleTensorError",
        "OperatorNotAllowedInGraphError",
    ];
    let by_module = error_type.starts_with("torch._dynamo.") || error_type.starts_with("torch._inductor.");
    (by_module || TYPES.contains(&ty)).then_some(Reason::CompileError)
}

/// Rule 10: TensorFlow's kernel registry said no. `dtype_unsupported` when the op has kernels
/// for the device (with other dtypes), `not_implemented` when it has none there.
/// - `NotFoundError: Could not find device for node: {{node MatrixDeterminant}} =
///   MatrixDeterminant[T=DT_HALF] All kernels registered for op MatrixDeterminant:
///   device='CPU'; T in [DT_FLOAT] …` — no device can run this node; kernels on a real
///   (non-`*_JIT`) device mean a dtype gap, `<no registered kernels>` (e.g. `NcclAllReduce` on
///   a CPU build) means no kernel at all.
/// - `No OpKernel was registered to support Op 'Erfinv' … with these attrs: [T=DT_BFLOAT16]
///   Registered devices: [CPU] Registered kernels: device='CPU'; T in [DT_FLOAT] …` — a dtype
///   gap when a registered device has kernels, else (only `device='GPU'` kernels on a CPU
///   host) not implemented.
/// - `No registered 'Cumprod' OpKernel for XLA_CPU_JIT devices compatible with node … (OpKernel
///   was found, but attributes didn't match) Requested Attributes: T=DT_INT16` ⇒ dtype;
///   without that note and without a kernel for the named device (e.g. `No registered
///   'AsString' OpKernel for XLA_CPU_JIT devices`, from `jit_compile=True`) ⇒ not implemented.
/// - `Could not satisfy device specification '…/device:GPU:0'. enable_soft_placement=0.
///   Supported device types [CPU]. All available devices […GPU:0, …CPU:0]` (the device exists,
///   rule 5 did not fire) ⇒ not implemented: no kernel for this node on that device.
fn rule_tf_kernel_registry(m: &str) -> Option<Reason> {
    let dtype_if = |gap: bool| Some(if gap { Reason::DtypeUnsupported } else { Reason::NotImplemented });
    if m.contains("could not find device for node") {
        let listing = after(m, "all kernels registered for op").unwrap_or("");
        return dtype_if(kernel_devices(listing).any(|d| !d.ends_with("_jit")));
    }
    if m.contains("no opkernel was registered to support op") {
        let registered = bracketed_after(m, "registered devices: [").unwrap_or("");
        let listing = after(m, "registered kernels:").unwrap_or("");
        let present: Vec<&str> = registered.split(',').map(str::trim).filter(|d| !d.is_empty()).collect();
        return dtype_if(kernel_devices(listing).any(|d| present.contains(&d)));
    }
    if m.contains("no registered '") && m.contains("opkernel for ") {
        let mut all_dtype = true;
        for segment in m.split("no registered '").skip(1) {
            let device = after(segment, "opkernel for ")
                .and_then(|s| s.split(" devices").next())
                .map(|s| s.trim().trim_matches('\''))
                .unwrap_or("");
            let listing = after(segment, "registered:").unwrap_or("");
            let gap = segment.contains("attributes didn't match") || kernel_devices(listing).any(|d| d == device);
            all_dtype &= gap;
        }
        return dtype_if(all_dtype);
    }
    if (m.contains("could not satisfy") && m.contains("device specification")) || m.contains("no supported kernel for")
    {
        return Some(Reason::NotImplemented);
    }
    None
}

/// Rule 11: messages that can only mean "this dtype is not supported" ⇒ `dtype_unsupported`.
/// - PyTorch dispatch: `"linalg_svd_cpu" not implemented for 'BFloat16'` (also `'Half'`,
///   `'ComplexFloat'`, `'Bool'`, `'Long'`, `'UInt32'` …); `Unsupported dtype Half`;
///   `linalg.det: Expected a floating point or complex tensor as input. Got Int`.
/// - JAX: `(KeyError(<class 'ml_dtypes.bfloat16'>), 'Unsupported dtype bfloat16.')`,
///   `lgamma does not accept dtype int32. Accepted dtypes are subtypes of floating.`,
///   `Arguments to jax.numpy.gcd must be integers.`, `ldexp not supported for input types`.
/// - NumPy: `array type float16 is unsupported in linalg`, `ufunc 'bitwise_and' not supported
///   for the input types`, `ufunc 'gcd' did not contain a loop with signature matching types`.
/// - TensorFlow: `Value for attr 'T' of bfloat16 is not in the list of allowed values: …`
///   (only when the value is a dtype name), `Value passed to parameter 'input' has DataType
///   bfloat16 not in list of allowed values`, `RFFT requires tf.float32 or tf.float64 inputs`,
///   ``Input `a` must have `float`-like `dtype` (saw complex64)``.
/// - SciPy: `convolve2d not available for this type.`
/// - ONNX Runtime (an export route's model): `INVALID_GRAPH : This is an invalid model. Type
///   Error: Type 'tensor(bfloat16)' of input parameter (a_0) of operator (Sin) in node
///   (node_sin) is invalid.` — the ONNX operator's schema has no such type.
fn rule_dtype_specific(m: &str) -> Option<Reason> {
    const PHRASES: &[&str] = &[
        "unsupported dtype",
        "does not accept dtype",
        "is unsupported in linalg",
        "not supported for the input types",
        "not supported for input types",
        "did not contain a loop with signature matching types",
        "expected a floating point or complex tensor",
        "must be integers",
        // torch.linalg.pinv(Half{[16, 8]}): expected a tensor with 2 or more dimensions of float,
        // double, cfloat or cdouble types
        "of float, double, cfloat or cdouble types",
        // tf.linalg.matrix_rank: Input `a` must have `float`-like `dtype` (saw complex64).
        "-like `dtype` (saw ",
        // scipy.signal.convolve2d: convolve2d not available for this type.
        "not available for this type",
        // ONNX Runtime: an operator used at a type outside its ONNX schema.
        "type error: type 'tensor(",
        // ONNX Runtime's CPU build has no complex tensors: `MLDataType for: tensor(complex64) is
        // not currently registered or supported`.
        "is not currently registered or supported",
        // IREE llvm-cpu links no bfloat16 conversion routine (`iree-lld: error: undefined
        // symbol: __truncsfbf2`).
        "undefined symbol: __truncsfbf2",
        // PyTorch's OpInfo samples at dtypes an operator refuses (issue 36):
        // torch.signal.windows.hann: `general_cosine expects float32 or float64 dtypes, got: torch.bool`.
        " or float64 dtypes, got",
        // torch.view_as_real: `view_as_real is only supported for complex tensors`.
        "is only supported for complex tensors",
        // torch.sparse.sampled_addmm: `Expected self to be a floating-point or complex tensor, but got Bool`.
        "to be a floating-point or complex tensor",
    ];
    let torch_dispatch = quoted_after(m, " not implemented for '").is_some_and(is_torch_scalar_type);
    let tf_attr = tf_attr_value_not_allowed(m).is_some_and(|v| TF_DTYPES.contains(&v));
    let tf_param = m.contains("has datatype") && m.contains("not in list of allowed values");
    let requires = requires_dtype(m);
    let iree = iree_element_type_refused(m);
    (torch_dispatch || tf_attr || tf_param || requires || iree || contains_any(m, PHRASES))
        .then_some(Reason::DtypeUnsupported)
}

/// IREE's code generators refusing an element type (docs/vulkan.md): an MLIR operand
/// constraint naming the type it got (`'spirv.GL.Sin' op operand #0 must be 16/32-bit float …,
/// but got 'f64'`; `'arith.sitofp' op operand #0 must be signless-fixed-width-integer-like, but
/// got 'complex<f32>'`), or an operation on bf16 vectors it cannot legalize (`failed to
/// legalize operation 'vector.bitcast': … (vector<4xbf16>) -> vector<2xf32>`).
fn iree_element_type_refused(m: &str) -> bool {
    const SCALARS: &[&str] = &["f64", "f16", "bf16", "i64", "i8", "i16", "i1"];
    let operand = m.find(" op operand #").is_some_and(|i| {
        let constraint = &m[i..];
        let Some(j) = constraint.find("but got '") else { return false };
        // An index-typed constraint (`must be variadic of index, but got 'i64'`) is a lowering
        // gap, not an element type the device lacks.
        if constraint[..j].contains(" index") {
            return false;
        }
        let ty = constraint[j + 9..].split('\'').next().unwrap_or("");
        // `vector<4xf64>`, `tensor<8x8xbf16>`: the element type after the last `x`.
        let element = match ty.strip_prefix("vector<").or_else(|| ty.strip_prefix("tensor<")) {
            Some(inner) => inner.trim_end_matches('>').rsplit('x').next().unwrap_or(""),
            None => ty,
        };
        SCALARS.contains(&element) || element.starts_with("complex<") || ty.starts_with("complex<")
    });
    let legalize = m.contains("failed to legalize operation") && m.contains("xbf16>");
    operand || legalize
}

/// Rule 12: messages that can only mean "no kernel or lowering on this device" ⇒
/// `not_implemented`. Examples: PyTorch's `Could not run 'aten::empty.memory_format' with
/// arguments from the 'XLA' backend` (or `'MPS'`), `The operator 'aten::_linalg_eigh.eigenvalues'
/// is not currently implemented for the MPS device`; JAX's `MLIR translation rule for primitive
/// 'x' not found for platform cpu`, `NOT_FOUND: No FFI handler registered for cuhybrid_eig_real
/// on a platform Host`, Pallas' `Only interpret mode is supported on CPU backend.`, torch_xla's
/// `RuntimeError: Error while lowering: [] aten::isnan` (no XLA lowering for the op; from the
/// paper's PyTorch TPU report), ONNX Runtime's `NOT_IMPLEMENTED : Could not find an
/// implementation for Exp(13) node with name ''` (no kernel for the operator at that dtype on
/// the session's execution provider; docs/ir-routes.md), IREE's `error: failed to legalize
/// operation 'stablehlo.custom_call' that was explicitly marked illegal` (no lowering for it).
fn rule_not_implemented_specific(m: &str) -> Option<Reason> {
    const PHRASES: &[&str] = &[
        "not currently implemented for the",
        "error while lowering",
        "not found for platform",
        "no ffi handler registered",
        "only interpret mode is supported",
        "no registered implementation for custom call",
        "could not find an implementation for",
        // IREE: no lowering for a StableHLO operation (JAX's LAPACK custom calls on cpu).
        "failed to legalize operation",
        // ONNX Runtime: an operator the exporter emitted that it has no kernel for at that opset
        // (`No Op registered for CumProd with domain_version of 18`).
        "no op registered for",
    ];
    let torch_backend = m.contains("could not run '") && m.contains("backend");
    (torch_backend || contains_any(m, PHRASES)).then_some(Reason::NotImplemented)
}

/// Rule 13: a compiler rejected the function ⇒ `compile_error`. Examples: JAX's
/// `JaxRuntimeError: INVALID_ARGUMENT: No such compile option: 'x'` (an XLA runtime error
/// with status `INVALID_ARGUMENT`, met while compiling; the older `XlaRuntimeError` too),
/// TensorFlow's `XLA compilation requires that operator arguments that represent shapes or
/// dimensions be evaluated to concrete values at compile time` and `tf2xla conversion failed`
/// (when rule 10 did not name a missing kernel), `Mosaic failed to compile TPU kernel`.
/// What compiled targets meet when tracing refuses the program: JAX's `function f traced for
/// jit returned a value of type <class 'str'>, which is not a valid JAX type`, TensorFlow's
/// `To be compatible with tf.function, Python functions must return zero or more Tensors …
/// found return value of type Operation`, `tf.function only supports singleton tf.Variables
/// created on the first call` and `UnimplementedError: We failed to lift variable creations
/// out of this tf.function, so this tf.function cannot be run on XLA` (before rule 15 sees
/// its type), autograph's `Cannot convert a list containing a tensor of dtype int64 to float32`
/// for a Python list it turned into a loop variable (before rule 14 sees the dtypes).
fn rule_compile_message(ty: &str, m: &str) -> Option<Reason> {
    const PHRASES: &[&str] = &[
        "tf2xla conversion failed",
        "xla compilation requires",
        "compile-time constant",
        "failed to compile",
        "compilation failed",
        "compilation failure",
        "is not a valid jax type",
        "to be compatible with tf.function",
        "tf.function only supports singleton tf.variables",
        "cannot be run on xla",
        "cannot convert a list containing a tensor",
    ];
    let xla_invalid = matches!(ty, "JaxRuntimeError" | "XlaRuntimeError") && m.contains("invalid_argument");
    (xla_invalid || contains_any(m, PHRASES)).then_some(Reason::CompileError)
}

/// Rule 14: a dtype is named next to "not supported"-like words ⇒ `dtype_unsupported`.
/// Examples: `linalg.inv: Low precision dtypes not supported. Got Half`, `std and var only
/// support floating point and complex dtypes`, `mean(): … Input dtype must be either a
/// floating point or complex dtype. Got: Long`, `quantile() input tensor must be either float
/// or double dtype`, `Sort does not support complex dtypes on CPU`, `dtype argument to `normal`
/// must be a float or complex dtype, got int32`, `randint only accepts integer dtypes`, MPS's
/// `Cannot convert a MPS Tensor to float64 dtype as the MPS framework doesn't support float64`.
/// A dtype alone is not enough: `expected m1 and m2 to have the same dtype, but got: float !=
/// double` is a catalogue mismatch (`other`).
fn rule_dtype_generic(m: &str) -> Option<Reason> {
    const REFUSALS: &[&str] = &[
        "not supported",
        "unsupported",
        "not implemented",
        "does not support",
        "doesn't support",
        "only support",
        "does not accept",
        "only accept",
        "must be",
        "not allowed",
        "allowed values",
        "is not handled",
        "not inexact",
        "cannot convert",
        "conversion requested dtype",
    ];
    // Messages that refuse dtypes without naming one the usual way.
    const TYPE_REFUSALS: &[&str] = &["doesn't handle types other than", "does not handle types other than"];
    ((names_a_dtype(m) && contains_any(m, REFUSALS)) || contains_any(m, TYPE_REFUSALS))
        .then_some(Reason::DtypeUnsupported)
}

/// Rule 15: every other "not implemented" ⇒ `not_implemented`. By type: `NotImplementedError`
/// (e.g. `The register_meta function for torch.nonzero() raises unimplemented by default`),
/// TensorFlow's `UnimplementedError`. By message: XLA's `UNIMPLEMENTED: …` status,
/// `… is not supported on this platform`, `Nonsymmetric eigendecomposition is only implemented
/// on the CPU backend`, `… is only supported on TPU`.
fn rule_not_implemented_generic(ty: &str, m: &str) -> Option<Reason> {
    const PHRASES: &[&str] = &[
        "unimplemented:",
        "not supported on this platform",
        "is not supported on ",
        "only implemented on",
        "only supported on",
        "not implemented on",
    ];
    let by_type = matches!(ty, "NotImplementedError" | "UnimplementedError");
    (by_type || contains_any(m, PHRASES)).then_some(Reason::NotImplemented)
}

/// Rule 16: what no rule recognises. On a compiled target's first call — tracing, compiling and
/// running the case at once — an error no rule names is the compiler's or its tracer's
/// refusal (`compile_error`): TensorFlow's autograph `TypeError: The two structures don't have
/// the same nested structure` for a loop it converted, say. Anywhere else it is `other`.
fn rule_anything_else(e: &ErrorReport) -> Reason {
    if e.compiled && e.phase == Some(Phase::FirstCall) { Reason::CompileError } else { Reason::Other }
}

// ------------------------------------------------------------------------------ helpers

/// The last dotted component of a qualified type: `torch.OutOfMemoryError` → `OutOfMemoryError`.
fn short_type(error_type: &str) -> &str {
    error_type.rsplit('.').next().unwrap_or(error_type)
}

fn contains_any(haystack: &str, needles: &[&str]) -> bool {
    needles.iter().any(|n| haystack.contains(n))
}

/// The text after the first `marker`.
fn after<'a>(s: &'a str, marker: &str) -> Option<&'a str> {
    s.find(marker).map(|i| &s[i + marker.len()..])
}

/// The text after `marker` up to the next `'`: `quoted_after("module 'jax' has", "module '")`
/// is `jax`.
fn quoted_after<'a>(s: &'a str, marker: &str) -> Option<&'a str> {
    let rest = after(s, marker)?;
    rest.find('\'').map(|j| &rest[..j])
}

/// The text after `marker` up to the next `]`.
fn bracketed_after<'a>(s: &'a str, marker: &str) -> Option<&'a str> {
    let rest = after(s, marker)?;
    rest.find(']').map(|j| &rest[..j])
}

/// Devices named in a TensorFlow kernel listing: `device='CPU'; T in [DT_FLOAT]` → `cpu`.
fn kernel_devices(listing: &str) -> impl Iterator<Item = &str> {
    listing.split("device='").skip(1).filter_map(|s| s.split('\'').next())
}

/// The device type of a TensorFlow device name: `/job:localhost/replica:0/task:0/device:gpu:0`
/// and `/gpu:0` are both `gpu`.
fn tf_device_type(name: &str) -> &str {
    let last = name.trim().rsplit('/').next().unwrap_or("");
    let last = last.strip_prefix("device:").unwrap_or(last);
    last.split(':').next().unwrap_or("")
}

/// True when TensorFlow could not place on the requested device because the process has no
/// device of that type (`… device:GPU:0'. … All available devices [/job:…/device:CPU:0].`).
fn tf_requested_device_absent(m: &str) -> bool {
    let requested = quoted_after(m, "could not satisfy device specification '")
        .or_else(|| quoted_after(m, "could not satisfy explicit device specification '"));
    let (Some(requested), Some(available)) = (requested, bracketed_after(m, "all available devices [")) else {
        return false;
    };
    let want = tf_device_type(requested);
    !want.is_empty() && !available.split(',').any(|d| tf_device_type(d) == want)
}

/// PyTorch `ScalarType` names as dispatch errors quote them (`'BFloat16'`, `'ComplexFloat'`,
/// `'UInt32'`, `'Float8_e4m3fn'`), lowercased.
fn is_torch_scalar_type(name: &str) -> bool {
    const PREFIXES: &[&str] = &[
        "byte", "char", "short", "int", "long", "half", "float", "double", "complex", "bool", "bfloat", "uint", "qint",
        "quint", "bits",
    ];
    PREFIXES.iter().any(|p| name.starts_with(p))
}

/// TensorFlow dtype names as its attr errors spell them, lowercased.
const TF_DTYPES: &[&str] = &[
    "half",
    "float",
    "double",
    "bfloat16",
    "float16",
    "float32",
    "float64",
    "int4",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint4",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "bool",
    "complex64",
    "complex128",
    "string",
    "qint8",
    "quint8",
    "qint16",
    "quint16",
    "qint32",
    "resource",
    "variant",
    "float8_e5m2",
    "float8_e4m3fn",
    "float8_e4m3fnuz",
    "float8_e4m3b11fnuz",
    "float8_e5m2fnuz",
];

/// The value in `Value for attr 'T' of bfloat16 is not in the list of allowed values`.
fn tf_attr_value_not_allowed(m: &str) -> Option<&str> {
    let rest = after(m, "value for attr '")?;
    let rest = after(rest, "' of ")?;
    rest.find(" is not in the list of allowed values").map(|j| rest[..j].trim())
}

/// Words that name a dtype unambiguously (`int` or `float` alone are too common in prose).
fn names_a_dtype(m: &str) -> bool {
    const WORDS: &[&str] = &[
        "dtype",
        "datatype",
        "data type",
        "float16",
        "float32",
        "float64",
        "float8",
        "complex32",
        "complex64",
        "complex128",
        "int8",
        "int16",
        "int32",
        "int64",
    ];
    contains_any(m, WORDS)
}

/// `… requires …` followed closely by a dtype or "floating": `RFFT requires tf.float32 or
/// tf.float64 inputs`, `… requires floating-point input`.
fn requires_dtype(m: &str) -> bool {
    const WINDOW: usize = 60;
    m.match_indices("requires ").any(|(i, _)| {
        let start = i + "requires ".len();
        let mut end = (start + WINDOW).min(m.len());
        while !m.is_char_boundary(end) {
            end -= 1;
        }
        let window = &m[start..end];
        window.contains("floating") || names_a_dtype(window)
    })
}

/// Top-level modules that belong to a framework, for rule 8.
fn framework_roots(framework: Framework) -> &'static [&'static str] {
    match framework {
        Framework::Numpy => &["numpy"],
        Framework::Torch => &["torch", "torchvision", "torchaudio", "torch_xla", "functorch"],
        Framework::Jax => &["jax", "jaxlib"],
        Framework::Tensorflow => &["tensorflow", "keras", "tf_keras"],
        Framework::Onnxruntime => &["onnxruntime", "onnx"],
        Framework::KerasJax => &["keras", "jax", "jaxlib"],
        Framework::KerasTorch => &["keras", "torch"],
        Framework::KerasTensorflow => &["keras", "tensorflow", "tf_keras"],
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use serde::Deserialize;

    use super::*;

    /// Real errors captured by `fixtures/capture.py`.
    const FIXTURES: &str = include_str!("fixtures/errors.json");

    #[derive(Deserialize)]
    struct Fixtures {
        captured_with: BTreeMap<String, String>,
        errors: Vec<Fixture>,
    }

    #[derive(Deserialize)]
    struct Fixture {
        framework: Framework,
        label: String,
        error_type: String,
        message: String,
        phase: Phase,
        harness: bool,
        /// Raised on a compiled target (absent: eager).
        #[serde(default)]
        compiled: bool,
        expected: Reason,
    }

    fn fixtures() -> Fixtures {
        serde_json::from_str(FIXTURES).expect("fixtures/errors.json parses")
    }

    fn run(framework: Framework, error_type: &str, message: &str, phase: &str) -> Reason {
        let phase = Some(phase.parse().unwrap());
        classify(framework, &ErrorReport { error_type, message, phase, harness: false, compiled: false })
    }

    /// First call on the device: where most framework errors surface.
    fn call(framework: Framework, error_type: &str, message: &str) -> Reason {
        run(framework, error_type, message, "first_call")
    }

    use Framework::{Jax, Numpy, Tensorflow as Tf, Torch};

    #[test]
    fn real_errors_classify_as_captured() {
        let fx = fixtures();
        let wrong: Vec<String> = fx
            .errors
            .iter()
            .filter_map(|f| {
                let e = ErrorReport {
                    error_type: &f.error_type,
                    message: &f.message,
                    phase: Some(f.phase),
                    harness: f.harness,
                    compiled: f.compiled,
                };
                let got = classify(f.framework, &e);
                (got != f.expected).then(|| {
                    format!(
                        "{} {}: expected {}, got {} ({}: {:.120})",
                        f.framework, f.label, f.expected, got, f.error_type, f.message
                    )
                })
            })
            .collect();
        assert!(
            wrong.is_empty(),
            "{} of {} fixtures misclassified:\n{}",
            wrong.len(),
            fx.errors.len(),
            wrong.join("\n")
        );
    }

    #[test]
    fn fixtures_are_broad_and_well_formed() {
        let fx = fixtures();
        for key in ["numpy", "torch", "jax"] {
            assert!(fx.captured_with.contains_key(key), "captured_with lacks {key}");
        }
        assert!(fx.captured_with.keys().any(|k| k.starts_with("tensorflow")), "captured_with lacks tensorflow");
        for fw in Framework::ALL {
            let n = fx.errors.iter().filter(|f| f.framework == fw).count();
            assert!(n >= 10, "only {n} fixtures for {fw}");
        }
        let reasons: BTreeSet<Reason> = fx.errors.iter().map(|f| f.expected).collect();
        for r in Reason::ALL {
            let decided_elsewhere = matches!(
                r,
                Reason::WrongResult | Reason::DtypeChanged | Reason::Timeout | Reason::Crash | Reason::Recompiles
            );
            assert_eq!(reasons.contains(&r), !decided_elsewhere, "fixture coverage of {r}");
        }
        let mut labels = BTreeSet::new();
        for f in &fx.errors {
            assert!(labels.insert(f.label.as_str()), "duplicate label {}", f.label);
            assert!(
                matches!(
                    f.phase,
                    Phase::Resolve | Phase::Inputs | Phase::Setup | Phase::FirstCall | Phase::Outputs | Phase::Steady
                ),
                "{}: phase {}",
                f.label,
                f.phase
            );
            assert!(f.message.chars().count() <= 4000, "{}: message longer than the worker sends", f.label);
        }
    }

    #[test]
    fn rule_1_harness_flag_wins_over_everything() {
        let msg = "CUDA out of memory. Tried to allocate 2.00 GiB";
        let e = ErrorReport {
            error_type: "torch.OutOfMemoryError",
            message: msg,
            phase: Some(Phase::FirstCall),
            harness: true,
            compiled: false,
        };
        assert_eq!(classify(Torch, &e), Reason::HarnessError);
        assert_eq!(classify(Torch, &ErrorReport { harness: false, ..e }), Reason::OutOfMemory);
        let e = ErrorReport {
            error_type: "AttributeError",
            message: "module 'jax' has no attribute 'x'",
            phase: Some(Phase::Resolve),
            harness: true,
            compiled: false,
        };
        assert_eq!(classify(Jax, &e), Reason::HarnessError);
    }

    /// Export routes (docs/ir-routes.md): the exporter's refusal, and ONNX Runtime's two
    /// refusals — an operator at a type outside its schema, a kernel missing for a type.
    #[test]
    fn export_route_failures() {
        let report = |ty, msg| ErrorReport {
            error_type: ty,
            message: msg,
            phase: Some(Phase::FirstCall),
            harness: false,
            compiled: true,
        };
        let c = |ty, msg| classify(Framework::Torch, &report(ty, msg));
        assert_eq!(
            c("mlport.ExportError", "ConversionError: Failed to convert the exported program"),
            Reason::ExportError
        );
        assert_eq!(
            c(
                "onnxruntime.capi.onnxruntime_pybind11_state.InvalidGraph",
                "[ONNXRuntimeError] : 10 : INVALID_GRAPH : This is an invalid model. Type Error: Type 'tensor(bfloat16)' of \
                 input parameter (a_0) of operator (Sin) in node (node_sin) is invalid."
            ),
            Reason::DtypeUnsupported
        );
        assert_eq!(
            c(
                "onnxruntime.capi.onnxruntime_pybind11_state.NotImplemented",
                "[ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : Could not find an implementation for Erf(13) node with name 'n0'"
            ),
            Reason::NotImplemented
        );
        assert_eq!(
            c("iree.compiler.tools.binaries.CompilerToolError", "Error invoking IREE compiler tool iree-compile"),
            Reason::CompileError
        );
        assert_eq!(
            c(
                "iree.compiler.tools.binaries.CompilerToolError",
                "Error invoking IREE compiler tool iree-compile Error code: 1 Diagnostics: x.py:213:40: error: failed to \
                 legalize operation 'stablehlo.custom_call' that was explicitly marked illegal"
            ),
            Reason::NotImplemented
        );
        let ort = "onnxruntime.capi.onnxruntime_pybind11_state.InvalidGraph";
        let cumprod = "[ONNXRuntimeError] : 10 : INVALID_GRAPH : This is an invalid model. In Node, (\"node_CumProd_0\", \
                       CumProd, \"\", -1) : (\"in_0\": tensor(float),) , Error No Op registered for CumProd with \
                       domain_version of 18";
        assert_eq!(c(ort, cumprod), Reason::NotImplemented);
        let complex = "[ONNXRuntimeError] : 1 : FAIL : Exception during loading: MLDataType for: tensor(complex64) is \
                       not currently registered or supported";
        assert_eq!(c("onnxruntime.capi.onnxruntime_pybind11_state.Fail", complex), Reason::DtypeUnsupported);
        let bf16 = "Error invoking IREE compiler tool iree-compile Error code: 1 Diagnostics: iree-lld: error: \
                    undefined symbol: __truncsfbf2";
        assert_eq!(c("iree.compiler.tools.binaries.CompilerToolError", bf16), Reason::DtypeUnsupported);
        // IREE's vulkan-spirv code generator on lavapipe (docs/vulkan.md), messages as recorded.
        let tool = "iree.compiler.tools.binaries.CompilerToolError";
        let vector_bf16 = "IREE compile (vulkan-spirv, target llvmpipe): Error invoking IREE compiler tool iree-compile \
                           Error code: 1 Diagnostics: <stdin>:4:10: error: failed to legalize operation \
                           'vector.bitcast': %52 = \"vector.bitcast\"(%37) : (vector<4xbf16>) -> vector<2xf32>";
        assert_eq!(c(tool, vector_bf16), Reason::DtypeUnsupported);
        let sin_f64 = "Diagnostics: x.py:25:19: error: 'spirv.GL.Sin' op operand #0 must be 16/32-bit float or \
                       fixed-length vector of 16/32-bit float values of length 2/3/4/8/16 of ranks 1, but got 'f64'";
        assert_eq!(c(tool, sin_f64), Reason::DtypeUnsupported);
        let complex_sin = "<stdin>:4:10: error: 'arith.sitofp' op operand #0 must be signless-fixed-width-integer-like, \
                           but got 'complex<f32>'";
        assert_eq!(c(tool, complex_sin), Reason::DtypeUnsupported);
        let shape = "error: 'tensor.expand_shape' op operand #0 must be ranked tensor of any type values, but got \
                     'vector<4xf32>'";
        assert_ne!(c(tool, shape), Reason::DtypeUnsupported, "a shape constraint names no element type");
        let vector_f64 = "<stdin>:5:10: error: 'spirv.GL.Sin' op operand #0 must be 16/32-bit float or fixed-length \
                          vector of 16/32-bit float values of length 2/3/4/8/16 of ranks 1, but got 'vector<4xf64>'";
        assert_eq!(c(tool, vector_f64), Reason::DtypeUnsupported);
        let index = "error: 'vector.extract' op operand #1 must be variadic of index, but got 'i64'";
        assert_ne!(c(tool, index), Reason::DtypeUnsupported, "an index constraint is a lowering gap");
    }

    #[test]
    fn rule_2_import_phase_is_other() {
        let so = "libcudart.so.12: cannot open shared object file: No such file or directory";
        assert_eq!(run(Torch, "ImportError", so, "import"), Reason::Other);
        assert_eq!(run(Jax, "MemoryError", "", "import"), Reason::Other);
        assert_eq!(run(Tf, "ModuleNotFoundError", "No module named 'tensorflow'", "import"), Reason::Other);
    }

    #[test]
    fn rule_3_unresolved_names_are_api_missing() {
        let r = |ty, msg| run(Torch, ty, msg, "resolve");
        assert_eq!(r("AttributeError", "module 'torch' has no attribute 'symeig'"), Reason::ApiMissing);
        assert_eq!(r("ModuleNotFoundError", "No module named 'torch_xla'"), Reason::ApiMissing);
        assert_eq!(r("ImportError", "cannot import name 'x' from 'torch.y'"), Reason::ApiMissing);
        // A library that fails to load is a broken install, not a missing function.
        let so = "libtpu.so: cannot open shared object file: No such file or directory";
        assert_eq!(r("ImportError", so), Reason::Other);
        assert_eq!(r("ImportError", "/x/_C.so: undefined symbol: _ZN3c10"), Reason::Other);
        // Other exception types at resolve time go through the remaining rules.
        assert_eq!(r("RuntimeError", "something else"), Reason::Other);
        // The same AttributeError outside `resolve` is not rule 3 (see rule 8).
        assert_eq!(run(Torch, "AttributeError", "'Tensor' object has no attribute 'foo'", "first_call"), Reason::Other);
    }

    #[test]
    fn rule_4_silent_fallback_needs_the_workers_type() {
        let msg = "output on cpu, expected cuda:0";
        assert_eq!(run(Torch, "mlport.SilentFallback", msg, "outputs"), Reason::SilentFallback);
        assert_eq!(run(Torch, "mylib.SilentFallback", msg, "outputs"), Reason::Other);
    }

    #[test]
    fn rule_5_absent_devices_are_harness_errors() {
        assert_eq!(call(Torch, "AssertionError", "Torch not compiled with CUDA enabled"), Reason::HarnessError);
        let msg = "CUDA error: no CUDA-capable device is detected\nCUDA kernel errors might be asynchronously reported";
        assert_eq!(call(Torch, "torch.AcceleratorError", msg), Reason::HarnessError);
        let msg = "Could not satisfy explicit device specification '/device:GPU:0' because no devices matching that \
                   specification are registered in this process; available devices: \
                   /job:localhost/replica:0/task:0/device:CPU:0";
        assert_eq!(call(Tf, "tensorflow.python.framework.errors_impl.InvalidArgumentError", msg), Reason::HarnessError);
        // The requested device exists but has no kernel for the node: rule 10, not rule 5.
        let msg = "Could not satisfy device specification '/job:localhost/replica:0/task:0/device:GPU:0'. \
                   enable_soft_placement=0. Supported device types [CPU]. All available devices \
                   [/job:localhost/replica:0/task:0/device:GPU:0, \
                   /job:localhost/replica:0/task:0/device:CPU:0]. [Op:Unique]";
        assert_eq!(
            call(Tf, "tensorflow.python.framework.errors_impl.InvalidArgumentError", msg),
            Reason::NotImplemented
        );
    }

    #[test]
    fn rule_6_out_of_memory() {
        let cuda = "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which \
                    1.25 MiB is free.";
        assert_eq!(call(Torch, "torch.OutOfMemoryError", cuda), Reason::OutOfMemory);
        assert_eq!(call(Torch, "torch.cuda.OutOfMemoryError", "anything"), Reason::OutOfMemory);
        assert_eq!(call(Torch, "RuntimeError", "CUDA OUT OF MEMORY"), Reason::OutOfMemory);
        let mps = "MPS backend out of memory (MPS allocated: 18.12 GB, other allocations: 1.23 GB, max allowed: \
                   18.13 GB). Tried to allocate 256.00 MB on private pool.";
        assert_eq!(call(Torch, "RuntimeError", mps), Reason::OutOfMemory);
        let tpu = "RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory in memory space hbm. \
                   Used 17.5G of 15.48G hbm.";
        assert_eq!(call(Jax, "jaxlib.xla_extension.XlaRuntimeError", tpu), Reason::OutOfMemory);
        assert_eq!(call(Torch, "RuntimeError", "cuDNN error: CUDNN_STATUS_ALLOC_FAILED"), Reason::OutOfMemory);
        assert_eq!(call(Numpy, "MemoryError", ""), Reason::OutOfMemory);
        // Refusals that are not about memory stay out.
        assert_eq!(call(Numpy, "ValueError", "negative dimensions are not allowed"), Reason::Other);
    }

    #[test]
    fn rule_7_signature_mismatch_is_other_not_api_missing() {
        let msg = "eigh() got an unexpected keyword argument 'eigenvectors'";
        assert_eq!(call(Torch, "TypeError", msg), Reason::Other);
        // Even when the message says the keyword was removed (rule 8 would say api_missing).
        let msg = "solve() got an unexpected keyword argument 'sym_pos' (sym_pos was removed in SciPy 1.11)";
        assert_eq!(call(Jax, "TypeError", msg), Reason::Other);
        let msg = "full() missing 1 required positional argument: 'fill_value'";
        assert_eq!(call(Jax, "TypeError", msg), Reason::Other);
    }

    #[test]
    fn rule_8_removed_api_at_call_time() {
        let attr = |fw, msg, phase| run(fw, "AttributeError", msg, phase);
        assert_eq!(attr(Tf, "module 'tensorflow' has no attribute 'Session'", "setup"), Reason::ApiMissing);
        assert_eq!(attr(Tf, "module 'keras.layers' has no attribute 'Foo'", "first_call"), Reason::ApiMissing);
        // Only the case's own framework: a NumPy name missing in a PyTorch case is not PyTorch's API.
        assert_eq!(attr(Torch, "module 'numpy' has no attribute 'float'", "first_call"), Reason::Other);
        assert_eq!(attr(Numpy, "module 'numpy' has no attribute 'float'", "first_call"), Reason::ApiMissing);
        // Only while setting up or making the call.
        assert_eq!(attr(Jax, "module 'jax' has no attribute 'tree_map'", "outputs"), Reason::Other);
        assert_eq!(attr(Torch, "'Tensor' object has no attribute 'foo'", "setup"), Reason::Other);
        let msg = "cannot import name 'ShardedDeviceArray' from 'jax.interpreters.pxla' (/x/jax/interpreters/pxla.py)";
        assert_eq!(run(Jax, "ImportError", msg, "setup"), Reason::ApiMissing);
        assert_eq!(run(Jax, "ModuleNotFoundError", "No module named 'flax'", "setup"), Reason::Other);
        let msg = "This function was deprecated since version 1.9 and is now removed. Please use the \
                   `torch.linalg.solve` function instead.";
        assert_eq!(call(Torch, "RuntimeError", msg), Reason::ApiMissing);
        // Removal stubs win over dtype words in their advice.
        let msg = "This function was deprecated since version 1.9 and is now removed. `torch.linalg.eig` returns \
                   complex tensors of dtype `cfloat` or `cdouble` rather than real tensors; complex32 not supported";
        assert_eq!(call(Torch, "RuntimeError", msg), Reason::ApiMissing);
    }

    #[test]
    fn rule_9_compiler_exceptions_beat_their_wrapped_text() {
        let msg = "backend='inductor' raised:\nNotImplementedError: \"addmm\" not implemented for 'Half'";
        assert_eq!(call(Torch, "torch._dynamo.exc.BackendCompilerFailed", msg), Reason::CompileError);
        let msg = "LoweringException: NotImplementedError: unsupported dtype torch.complex64";
        assert_eq!(call(Torch, "torch._inductor.exc.InductorError", msg), Reason::CompileError);
        let msg = "Array boolean indices must be concrete; got bool[4]";
        assert_eq!(call(Jax, "jax.errors.NonConcreteBooleanIndexError", msg), Reason::CompileError);
        // The same text under a plain type is classified by its message.
        let msg = "\"addmm\" not implemented for 'Half'";
        assert_eq!(call(Torch, "RuntimeError", msg), Reason::DtypeUnsupported);
    }

    #[test]
    fn rule_10_tensorflow_kernel_registry() {
        let nf = "tensorflow.python.framework.errors_impl.NotFoundError";
        let ia = "tensorflow.python.framework.errors_impl.InvalidArgumentError";
        // Kernels for the GPU exist, with other attributes.
        let msg = "No registered 'Size' OpKernel for GPU devices compatible with node {{node Prod}} = \
                   Size[T=DT_STRING, out_type=DT_INT32]\n\t (OpKernel was found, but attributes didn't match)\n\t.  \
                   Registered:  device='CPU'; out_type in [DT_INT64]\n  \
                   device='GPU'; T in [DT_INT32]; out_type in [DT_INT64]";
        assert_eq!(call(Tf, nf, msg), Reason::DtypeUnsupported);
        let msg = "No registered 'Foo' OpKernel for 'GPU' devices compatible with node {{node Foo}}\n\t.  \
                   Registered:  device='CPU'; T in [DT_FLOAT]\n  device='GPU'; T in [DT_FLOAT]\n";
        assert_eq!(call(Tf, nf, msg), Reason::DtypeUnsupported);
        // No kernel for the GPU at all.
        let msg = "No registered 'NGraphVariable' OpKernel for GPU devices compatible with node {{node beta}}\n\t.  \
                   Registered:  device='CPU'\n";
        assert_eq!(call(Tf, nf, msg), Reason::NotImplemented);
        let msg = "No registered 'Unique' OpKernel for 'GPU' devices compatible with node {{node Unique}}\n\t.  \
                   Registered:  <no registered kernels>\n";
        assert_eq!(call(Tf, nf, msg), Reason::NotImplemented);
        // Kernels only for a device this process does not have.
        let msg = "No OpKernel was registered to support Op 'ActiveShift2DOp' with these attrs.  Registered devices: \
                   [CPU], Registered kernels:\n  device='GPU'; T in [DT_DOUBLE]\n  device='GPU'; T in [DT_FLOAT]";
        assert_eq!(call(Tf, ia, msg), Reason::NotImplemented);
        let msg = "No OpKernel was registered to support Op 'X' used by {{node X}} with these attrs: [T=DT_HALF]\n\
                   Registered devices: [CPU, GPU]\nRegistered kernels:\n  device='GPU'; T in [DT_FLOAT]";
        assert_eq!(call(Tf, ia, msg), Reason::DtypeUnsupported);
        // Only an XLA JIT kernel: nothing eager can run.
        let msg = "Could not find device for node: {{node Foo}} = Foo[T=DT_HALF]\nAll kernels registered for op \
                   Foo:\n  \
                   device='XLA_CPU_JIT'; T in [DT_FLOAT, DT_HALF]\n [Op:Foo]";
        assert_eq!(call(Tf, nf, msg), Reason::NotImplemented);
        // jit_compile: one op lacks a kernel entirely, another only the dtype: not implemented overall.
        let msg = "Detected unsupported operations when trying to compile graph g on XLA_GPU_JIT: Cumprod (No \
                   registered 'Cumprod' OpKernel for XLA_GPU_JIT devices compatible with node {{node Cumprod}}\n\t \
                   (OpKernel was found, but attributes didn't match) Requested Attributes: T=DT_INT16), AsString (No \
                   registered 'AsString' OpKernel for XLA_GPU_JIT devices compatible with node {{node AsString}})";
        assert_eq!(call(Tf, ia, msg), Reason::NotImplemented);
        let msg = "Could not satisfy explicit device specification '/device:GPU:0' because no supported kernel for \
                   GPU devices is available.";
        assert_eq!(call(Tf, ia, msg), Reason::NotImplemented);
    }

    #[test]
    fn rule_11_unambiguous_dtype_messages() {
        assert_eq!(call(Torch, "RuntimeError", "\"addmm_cuda\" not implemented for 'Bool'"), Reason::DtypeUnsupported);
        // Found by OpInfo samples at dtypes the operators refuse.
        for msg in [
            "general_cosine expects float32 or float64 dtypes, got: torch.bool",
            "view_as_real is only supported for complex tensors",
            "sparse_sampled_addmm: Expected self to be a floating-point or complex tensor, but got Bool",
        ] {
            assert_eq!(call(Torch, "RuntimeError", msg), Reason::DtypeUnsupported, "{msg}");
        }
        let msg = "\"index_add_cuda_\" not implemented for 'Float8_e4m3fn'";
        assert_eq!(call(Torch, "NotImplementedError", msg), Reason::DtypeUnsupported);
        // A quoted name that is not a dtype is a plain missing kernel (rule 15).
        let msg = "\"foo\" not implemented for 'SparseCsrCPU'";
        assert_eq!(call(Torch, "NotImplementedError", msg), Reason::NotImplemented);
        // TensorFlow attr errors count only when the value is a dtype.
        let ia = "tensorflow.python.framework.errors_impl.InvalidArgumentError";
        let msg = "Value for attr 'padding' of \"FOO\" is not in the list of allowed values: \"SAME\", \"VALID\"";
        assert_eq!(call(Tf, ia, msg), Reason::Other);
        let msg = "Value for attr 'T' of float8_e4m3fn is not in the list of allowed values: half, float";
        assert_eq!(call(Tf, ia, msg), Reason::DtypeUnsupported);
        let msg = "jnp.linalg.det requires floating-point or complex input, got int32";
        assert_eq!(call(Jax, "TypeError", msg), Reason::DtypeUnsupported);
        // `requires` far from any dtype is not enough.
        assert_eq!(
            call(Jax, "TypeError", "dot_general requires contracting dimensions to have the same shape"),
            Reason::Other
        );
    }

    #[test]
    fn rule_12_unambiguous_missing_kernels() {
        let msg = "The operator 'aten::_linalg_eigh.eigenvalues' is not currently implemented for the MPS device. If \
                   you want this op to be added in priority during the prototype phase of this feature, please comment \
                   on https://github.com/pytorch/pytorch/issues/77764. As a temporary fix, you can set the environment \
                   variable `PYTORCH_ENABLE_MPS_FALLBACK=1` to use the CPU as a fallback for this op.";
        assert_eq!(call(Torch, "NotImplementedError", msg), Reason::NotImplemented);
        let msg = "Could not run 'aten::_linalg_svd' with arguments from the 'XLA' backend. 'aten::_linalg_svd' is \
                   only \
                   available for these backends: [CPU, CUDA, Meta].";
        assert_eq!(call(Torch, "RuntimeError", msg), Reason::NotImplemented);
        let msg = "MLIR translation rule for primitive 'cholesky_update' not found for platform tpu";
        assert_eq!(call(Jax, "NotImplementedError", msg), Reason::NotImplemented);
        // torch_xla on TPU v3, from the paper's published report (arXiv 2309.07181 data).
        assert_eq!(call(Torch, "RuntimeError", "Error while lowering: [] aten::isnan"), Reason::NotImplemented);
    }

    #[test]
    fn rule_13_compile_messages() {
        let msg = "INVALID_ARGUMENT: Binary op add with incompatible shapes: f32[3] and f32[4].";
        assert_eq!(call(Jax, "jaxlib.xla_extension.XlaRuntimeError", msg), Reason::CompileError);
        // TensorFlow's InvalidArgumentError is ordinary argument checking.
        let ia = "tensorflow.python.framework.errors_impl.InvalidArgumentError";
        assert_eq!(call(Tf, ia, "INVALID_ARGUMENT: Incompatible shapes: [4] vs. [3]"), Reason::Other);
        let msg = "XLA compilation requires that operator arguments that represent shapes or dimensions be evaluated \
                   to concrete values at compile time. Input 0 to node `zeros` with op Fill must be a compile-time \
                   constant. {{node zeros}} = Fill[T=DT_FLOAT, index_type=DT_INT32]";
        assert_eq!(call(Tf, ia, msg), Reason::CompileError);
        assert_eq!(
            call(Jax, "jax.errors.JaxRuntimeError", "INTERNAL: Mosaic failed to compile TPU kernel"),
            Reason::CompileError
        );
    }

    #[test]
    fn rule_14_dtype_next_to_a_refusal() {
        let msg = "Cannot convert a MPS Tensor to float64 dtype as the MPS framework doesn't support float64. Please \
                   use float32 instead.";
        assert_eq!(run(Torch, "TypeError", msg, "inputs"), Reason::DtypeUnsupported);
        assert_eq!(
            call(Torch, "RuntimeError", "MPS does not support cumsum op with int64 input"),
            Reason::DtypeUnsupported
        );
        // Real messages from the built-in catalogue on CPU (torch 2.15, jax 0.10, tensorflow 2.21).
        let msg = "This function doesn't handle types other than float and double";
        assert_eq!(call(Torch, "RuntimeError", msg), Reason::DtypeUnsupported);
        let msg = "x.dtype=<dtype: 'bfloat16'> is not handled, see docstring for supported types.";
        assert_eq!(call(Tf, "TypeError", msg), Reason::DtypeUnsupported);
        let msg = "x.dtype=float16 is not supported, see docstring for supported types.";
        assert_eq!(call(Jax, "TypeError", msg), Reason::DtypeUnsupported);
        let msg = "data type <class 'ml_dtypes.bfloat16'> not inexact";
        assert_eq!(call(Tf, "ValueError", msg), Reason::DtypeUnsupported);
        let msg = "Cannot convert 57.29577951308232 to EagerTensor of dtype int32";
        assert_eq!(call(Tf, "TypeError", msg), Reason::DtypeUnsupported);
        let msg = "Tensor conversion requested dtype int32 for Tensor with dtype int64: <tf.Tensor: shape=(3,), \
                   dtype=int64, numpy=array([5, 4, 3])>";
        assert_eq!(call(Tf, "ValueError", msg), Reason::DtypeUnsupported);
        // A dtype without a refusal is a mismatch, not a gap.
        let msg = "expected m1 and m2 to have the same dtype, but got: float != double";
        assert_eq!(call(Torch, "RuntimeError", msg), Reason::Other);
        // A refusal without a dtype is not a dtype gap.
        assert_eq!(call(Jax, "ValueError", "xp and fp must be one-dimensional arrays of equal size"), Reason::Other);
    }

    #[test]
    fn rule_15_other_missing_implementations() {
        let msg = "UNIMPLEMENTED: Only 1 computation per replica supported, 8 requested.";
        assert_eq!(call(Jax, "jaxlib.xla_extension.XlaRuntimeError", msg), Reason::NotImplemented);
        let msg = "The Conv2D op currently only supports the NHWC tensor format on the CPU. The op was given the \
                   format: NCHW";
        assert_eq!(call(Tf, "tensorflow.python.framework.errors_impl.UnimplementedError", msg), Reason::NotImplemented);
        let msg = "Nonsymmetric eigendecomposition is only implemented on the CPU backend.";
        assert_eq!(call(Jax, "NotImplementedError", msg), Reason::NotImplemented);
        assert_eq!(
            call(Jax, "ValueError", "cholesky_update is not supported on this platform"),
            Reason::NotImplemented
        );
    }

    #[test]
    fn rule_16_unknown_errors_of_a_compiled_first_call_are_the_compilers() {
        let msg = "The two structures don't have the same nested structure.";
        let compiled = |phase: &str| ErrorReport {
            error_type: "TypeError",
            message: msg,
            phase: Some(phase.parse().unwrap()),
            harness: false,
            compiled: true,
        };
        assert_eq!(classify(Tf, &compiled("first_call")), Reason::CompileError);
        // Not in the steady state (the compiled call already ran once), nor before the call.
        assert_eq!(classify(Tf, &compiled("steady")), Reason::Other);
        assert_eq!(classify(Tf, &compiled("setup")), Reason::Other);
        // Named reasons keep their names on compiled targets.
        let e = ErrorReport { message: "\"addmm\" not implemented for 'Half'", ..compiled("first_call") };
        assert_eq!(classify(Torch, &e), Reason::DtypeUnsupported);
        assert_eq!(call(Tf, "TypeError", msg), Reason::Other, "eagerly it is no compiler's");
    }

    #[test]
    fn rule_16_anything_else_is_other() {
        let msg = "operands could not be broadcast together with shapes (4,) (3,)";
        assert_eq!(call(Numpy, "ValueError", msg), Reason::Other);
        assert_eq!(call(Numpy, "numpy.linalg.LinAlgError", "Singular matrix"), Reason::Other);
        assert_eq!(call(Jax, "KeyError", ""), Reason::Other);
    }

    #[test]
    fn helpers_parse_what_they_claim() {
        assert_eq!(short_type("torch._dynamo.exc.Unsupported"), "Unsupported");
        assert_eq!(short_type("TypeError"), "TypeError");
        assert_eq!(tf_device_type("/job:localhost/replica:0/task:0/device:gpu:0"), "gpu");
        assert_eq!(tf_device_type(" /gpu:1"), "gpu");
        assert_eq!(
            kernel_devices("  device='cpu'; t in [dt_float]\n  device='xla_cpu_jit'").collect::<Vec<_>>(),
            ["cpu", "xla_cpu_jit"]
        );
        assert_eq!(
            tf_attr_value_not_allowed("value for attr 't' of bfloat16 is not in the list of allowed values"),
            Some("bfloat16")
        );
        // A multi-byte character right at the window's edge must not panic.
        let m = format!("requires {}é", "x".repeat(59));
        assert!(!requires_dtype(&m));
    }
    #[test]
    fn dtype_messages_met_in_the_built_in_catalogue() {
        // Captured from the built-in catalogue's run on CPU (torch 2.15, tensorflow 2.21, scipy).
        let pinv = "linalg.pinv(Half{[16, 8]}): expected a tensor with 2 or more dimensions of float, double, cfloat or cdouble types";
        assert_eq!(call(Torch, "RuntimeError", pinv), Reason::DtypeUnsupported);
        let rank = "Input `a` must have `float`-like `dtype` (saw complex64).";
        assert_eq!(call(Tf, "TypeError", rank), Reason::DtypeUnsupported);
        assert_eq!(call(Numpy, "ValueError", "convolve2d not available for this type."), Reason::DtypeUnsupported);
    }

    #[test]
    fn onnx_runtime_missing_kernels_are_not_implemented() {
        // Captured from onnxruntime 1.32.0 (CPUExecutionProvider) creating a session for one node.
        let ty = "onnxruntime.capi.onnxruntime_pybind11_state.NotImplemented";
        let exp =
            "[ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : Could not find an implementation for Exp(13) node with name ''";
        assert_eq!(run(Framework::Onnxruntime, ty, exp, "setup"), Reason::NotImplemented);
        // A model outside the operator's schema is the caller's error, not a missing kernel.
        let invalid = "[ONNXRuntimeError] : 10 : INVALID_GRAPH : This is an invalid model. Type Error: Type \
                       'tensor(int32)' of input parameter (x0) of operator (Sin) in node () is invalid.";
        let ty = "onnxruntime.capi.onnxruntime_pybind11_state.InvalidGraph";
        assert_ne!(run(Framework::Onnxruntime, ty, invalid, "setup"), Reason::NotImplemented);
    }
}

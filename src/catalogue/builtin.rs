//! The built-in catalogue, embedded at compile time from catalogue/*.toml.

use super::{Catalogue, CatalogueError, parse_files};

const FILES: [(&str, &str); 9] = [
    ("catalogue/numpy.toml (built in)", include_str!("../../catalogue/numpy.toml")),
    ("catalogue/torch.toml (built in)", include_str!("../../catalogue/torch.toml")),
    ("catalogue/jax.toml (built in)", include_str!("../../catalogue/jax.toml")),
    ("catalogue/tensorflow.toml (built in)", include_str!("../../catalogue/tensorflow.toml")),
    // An add-on framework: planned only when selected (`Framework::in_default_run`).
    ("catalogue/onnxruntime.toml (built in)", include_str!("../../catalogue/onnxruntime.toml")),
    // Keras 3's ops and models, one file for its three backends (keras-jax, keras-torch,
    // keras-tensorflow); run when selected.
    ("catalogue/keras.toml (built in)", include_str!("../../catalogue/keras.toml")),
    // Workloads (docs/workloads.md): their functions join their framework's.
    ("catalogue/workloads/torch.toml (built in)", include_str!("../../catalogue/workloads/torch.toml")),
    ("catalogue/workloads/jax.toml (built in)", include_str!("../../catalogue/workloads/jax.toml")),
    ("catalogue/workloads/tensorflow.toml (built in)", include_str!("../../catalogue/workloads/tensorflow.toml")),
];

/// The built-in catalogue. An error here is a bug in a shipped file (a test loads it).
pub fn builtin() -> Result<Catalogue, CatalogueError> {
    let mut files = Vec::new();
    for (path, text) in FILES {
        files.extend(parse_files(path, text)?);
    }
    Catalogue::new(files)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_built_in_catalogue_is_valid_and_covers_the_paper() {
        let c = super::builtin().unwrap();
        assert_eq!(c.files.len(), 8);
        let paper_count = |fw| c.file(fw).unwrap().functions.iter().filter(|f| f.paper.is_some()).count();
        assert_eq!(paper_count(crate::model::Framework::Torch), 63);
        assert_eq!(paper_count(crate::model::Framework::Tensorflow), 72);
        assert_eq!(paper_count(crate::model::Framework::Jax), 65);
    }

    #[test]
    fn the_onnxruntime_catalogue_has_sixty_operators_each_with_a_float64_reference() {
        let c = super::builtin().unwrap();
        let ort = c.file(crate::model::Framework::Onnxruntime).unwrap();
        assert!(ort.functions.len() >= 60, "{} operators", ort.functions.len());
        let numpy = c.file(crate::model::Framework::Numpy).unwrap();
        for f in &ort.functions {
            assert!(f.name.starts_with("ai.onnx."), "{}", f.name);
            for case in &f.cases {
                // Its own NumPy/SciPy reference, or the NumPy file's entry for its op and case id.
                let by_op = f.op.as_deref().is_some_and(|op| {
                    numpy
                        .functions
                        .iter()
                        .any(|n| n.op.as_deref() == Some(op) && n.cases.iter().any(|k| k.id == case.id))
                });
                assert!(case.reference.is_some() || by_op, "{} case {} has no float64 reference", f.name, case.id);
            }
        }
    }
}

//! The built-in catalogue, embedded at compile time from catalogue/*.toml.

use super::{Catalogue, CatalogueError, parse};

const FILES: [(&str, &str); 4] = [
    ("catalogue/numpy.toml (built in)", include_str!("../../catalogue/numpy.toml")),
    ("catalogue/torch.toml (built in)", include_str!("../../catalogue/torch.toml")),
    ("catalogue/jax.toml (built in)", include_str!("../../catalogue/jax.toml")),
    ("catalogue/tensorflow.toml (built in)", include_str!("../../catalogue/tensorflow.toml")),
];

/// The built-in catalogue. An error here is a bug in a shipped file (a test loads it).
pub fn builtin() -> Result<Catalogue, CatalogueError> {
    Catalogue::new(FILES.iter().map(|(path, text)| parse(path, text)).collect::<Result<_, _>>()?)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_built_in_catalogue_is_valid_and_covers_the_paper() {
        let c = super::builtin().unwrap();
        assert_eq!(c.files.len(), 4);
        let paper_count = |fw| c.file(fw).unwrap().functions.iter().filter(|f| f.paper.is_some()).count();
        assert_eq!(paper_count(crate::model::Framework::Torch), 63);
        assert_eq!(paper_count(crate::model::Framework::Tensorflow), 72);
        assert_eq!(paper_count(crate::model::Framework::Jax), 65);
    }
}

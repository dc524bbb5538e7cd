//! What serves a data dir (or database) while it is re-embedded with another embedder: the
//! embedder its record names, built from the config's other settings (threads, queues), its
//! model found where [`locate`](super::locate) finds the model of that name.

use super::{EmbedError, EmbedderConfig, EmbedderKind, OnnxModel};

/// The config of the embedder `recorded` (`kind:model:dims`) names, for a re-embedding
/// toward `cfg`'s (whose vectors are `dims` wide). Only kinds whose identity says all
/// there is to build them can serve: `onnx` (any model), `minilm` and `hash`; and only at
/// the target's width, as the vector indexes have one.
pub fn serving_config(
    recorded: &str,
    cfg: &EmbedderConfig,
    dims: usize,
) -> Result<EmbedderConfig, EmbedError> {
    let refuse = |why: String| EmbedError::CannotServe {
        recorded: recorded.to_owned(),
        why,
    };
    let mut parts = recorded.split(':');
    let (Some(kind), Some(name), Some(width), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(refuse("its record is not kind:model:dims".into()));
    };
    if width.parse() != Ok(dims) {
        return Err(refuse(format!(
            "its vectors are {width} wide and the configured embedder's {dims}: a re-embedding \
             keeps the width"
        )));
    }
    let kind: EmbedderKind = kind.parse().map_err(|e| refuse(format!("{e}")))?;
    let model = match kind {
        EmbedderKind::Onnx => [OnnxModel::MiniLmL6V2, OnnxModel::E5SmallV2]
            .into_iter()
            .find(|m| m.card().name == name)
            .ok_or_else(|| refuse(format!("this build knows no ONNX model named {name}")))?,
        EmbedderKind::Minilm | EmbedderKind::Hash => cfg.model,
        EmbedderKind::Openai => {
            return Err(refuse(
                "a remote provider's settings are not recorded, so it cannot be rebuilt".into(),
            ));
        }
    };
    Ok(EmbedderConfig {
        kind,
        model,
        // The configured directory holds the target's model: the recorded one is found
        // in its default place.
        model_dir: None,
        ..cfg.clone()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_recorded_model_is_rebuilt_from_its_identity_or_refused_saying_why() {
        let cfg = EmbedderConfig {
            model: OnnxModel::E5SmallV2,
            model_dir: Some("/models/e5".into()),
            threads: 3,
            ..EmbedderConfig::default()
        };
        let minilm = serving_config("onnx:all-MiniLM-L6-v2-onnx-int8:384", &cfg, 384).unwrap();
        assert_eq!(
            (minilm.kind, minilm.model, minilm.model_dir, minilm.threads),
            (EmbedderKind::Onnx, OnnxModel::MiniLmL6V2, None, 3)
        );
        let hash = serving_config("hash:lexical-hash:384", &cfg, 384).unwrap();
        assert_eq!(hash.kind, EmbedderKind::Hash);
        for (recorded, why) in [
            ("hash:lexical-hash:64", "keeps the width"),
            ("onnx:bge-small:384", "no ONNX model named bge-small"),
            ("openai:text-embedding-3-small:384", "not recorded"),
            ("nonsense", "kind:model:dims"),
        ] {
            let err = serving_config(recorded, &cfg, 384).unwrap_err().to_string();
            assert!(err.contains(why) && err.contains(recorded), "{err}");
        }
    }
}

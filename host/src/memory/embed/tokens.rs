//! What the local MiniLM embedders share: their files check, the tokenizer set-up, and
//! splitting a batch into length-sorted passes.

use std::path::Path;

use tokenizers::{Tokenizer, TruncationParams};

use super::EmbedError;

/// Longest input in tokens, special tokens included; the rest of a text is ignored.
pub(super) const MAX_TOKENS: usize = 256;

/// Fails with [`EmbedError::ModelMissing`] (naming `package`) unless `dir` holds every file.
pub(super) fn require_files(
    dir: &Path,
    files: &'static [&'static str],
    package: &'static str,
) -> Result<(), EmbedError> {
    match files.iter().find(|f| !dir.join(f).is_file()) {
        None => Ok(()),
        Some(missing) => Err(EmbedError::ModelMissing {
            dir: std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf()),
            missing,
            files,
            package,
        }),
    }
}

/// Reads `path` whole, naming it in the error.
pub(super) fn read(path: &Path) -> Result<Vec<u8>, EmbedError> {
    std::fs::read(path).map_err(|e| EmbedError::Load(format!("reading {}: {e}", path.display())))
}

/// Loads `tokenizer.json` from `dir`, truncating at [`MAX_TOKENS`] and padding nothing.
///
/// The file pads every input to 128 tokens, which makes short texts ~11x slower; each
/// pass pads to its own longest input instead (see [`embed_in_passes`]).
pub(super) fn load_tokenizer(dir: &Path) -> Result<Tokenizer, EmbedError> {
    let mut tokenizer = Tokenizer::from_bytes(read(&dir.join("tokenizer.json"))?)
        .map_err(|e| EmbedError::Load(format!("parsing tokenizer.json: {e}")))?;
    tokenizer.with_padding(None);
    tokenizer
        .with_truncation(Some(TruncationParams {
            max_length: MAX_TOKENS,
            ..TruncationParams::default()
        }))
        .map_err(|e| EmbedError::Load(format!("setting truncation: {e}")))?;
    Ok(tokenizer)
}

/// Tokenizes `texts`, runs `forward` on length-sorted passes of at most `budget` padded
/// tokens (see [`in_passes`]), and returns the vectors in input order.
pub(super) fn embed_in_passes(
    tokenizer: &Tokenizer,
    texts: &[&str],
    budget: usize,
    mut forward: impl FnMut(&[&[u32]]) -> Result<Vec<Vec<f32>>, EmbedError>,
) -> Result<Vec<Vec<f32>>, EmbedError> {
    let ids = texts
        .iter()
        .map(|t| Ok(tokenizer.encode_fast(*t, true)?.get_ids().to_vec()))
        .collect::<tokenizers::Result<Vec<_>>>()
        .map_err(|e| EmbedError::Inference(format!("tokenizing: {e}")))?;
    in_passes(&ids, Vec::len, budget, |pass| {
        forward(&pass.iter().map(|ids| ids.as_slice()).collect::<Vec<_>>())
    })
}

/// Runs `forward` on length-sorted passes of `rows` of at most `budget` padded tokens
/// (each pass pads to its longest row; `len` tells a row's tokens; a row longer than the
/// budget, or any row with a budget of 0, is a pass of its own), and returns one output
/// per row in input order.
pub(super) fn in_passes<R, T: Default + Clone>(
    rows: &[R],
    len: impl Fn(&R) -> usize,
    budget: usize,
    mut forward: impl FnMut(&[&R]) -> Result<Vec<T>, EmbedError>,
) -> Result<Vec<T>, EmbedError> {
    let mut order: Vec<usize> = (0..rows.len()).collect();
    order.sort_by_key(|&i| len(&rows[i]));
    let mut out = vec![T::default(); rows.len()];
    let mut rest = &order[..];
    while !rest.is_empty() {
        // Sorted ascending, so a pass's padded size is its count times its last length.
        let take = rest
            .iter()
            .enumerate()
            .take_while(|&(k, &i)| k == 0 || (k + 1) * len(&rows[i]) <= budget)
            .count();
        let (pass, tail) = rest.split_at(take);
        let batch: Vec<&R> = pass.iter().map(|&i| &rows[i]).collect();
        for (&i, v) in pass.iter().zip(forward(&batch)?) {
            out[i] = v;
        }
        rest = tail;
    }
    Ok(out)
}

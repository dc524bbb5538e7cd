//! The default model's embeddings of the bench's texts, kept in a file across runs
//! (`WASMIND_BENCH_DIR`, `wasmind-bench-embeddings-<model>.bin`; never deleted): a data set
//! loaded into both backends is embedded once, and a later run of the same texts not at
//! all. An [`Embedder`] of the model's identity (a data dir and a database it loads are
//! served with the model itself afterwards), embedding with the model what it has not
//! seen.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{BufReader, BufWriter, Read, Write};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use wasmind::memory::Fusion;
use wasmind::memory::embed::{EmbedError, Embedder, Role};

/// What a file of embeddings starts with; one of another model or layout is started anew.
/// v2 keys each text by its role ([`key`]): an asymmetric model embeds a query and a stored
/// text differently.
fn header(model: &dyn Embedder) -> String {
    format!(
        "wasmind bench embeddings v2 {} {}\n",
        model.name(),
        model.dims()
    )
}

pub struct Remembered {
    model: Arc<dyn Embedder>,
    known: RwLock<HashMap<String, Vec<f32>>>,
    file: Mutex<BufWriter<File>>,
}

impl Remembered {
    /// The embeddings `model` made in earlier runs, read from its file.
    pub fn open(model: Arc<dyn Embedder>) -> Arc<Self> {
        let name: String = (model.name().chars())
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        let path = super::bench_dir(&format!("embeddings-{name}.bin"));
        let head = header(&*model);
        let read = match File::open(&path) {
            Ok(file) => read(BufReader::new(file), &head, model.dims()),
            Err(_) => None,
        };
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        // A record cut short (a run stopped while writing it) goes, as does a file of
        // another model: what follows is appended to whole records.
        let (known, whole) = read.unwrap_or_default();
        file.set_len(whole)
            .expect("cut the file to its whole records");
        if whole == 0 {
            file.write_all(head.as_bytes()).expect("write the header");
        }
        println!(
            "  {} embeddings remembered in {}",
            known.len(),
            path.display()
        );
        Arc::new(Self {
            model,
            known: RwLock::new(known),
            file: Mutex::new(BufWriter::new(file)),
        })
    }

    /// Each of `texts`' embedding as `role`, the model making those not known yet
    /// (`background`: on the caller's priority, as an import's are).
    fn vectors(
        &self,
        role: Role,
        texts: &[&str],
        background: bool,
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut missing: Vec<&str> = {
            let known = self.known.read();
            texts
                .iter()
                .copied()
                .filter(|t| !known.contains_key(&key(role, t)))
                .collect()
        };
        missing.sort_unstable();
        missing.dedup();
        if !missing.is_empty() {
            let made = match background {
                true => self.model.embed_background(role, &missing)?,
                false => self.model.embed(role, &missing)?,
            };
            let mut file = self.file.lock();
            let mut known = self.known.write();
            for (text, vector) in missing.iter().zip(made) {
                let key = key(role, text);
                let bytes = key.as_bytes();
                file.write_all(&(bytes.len() as u32).to_le_bytes())
                    .and_then(|()| file.write_all(bytes))
                    .and_then(|()| {
                        vector
                            .iter()
                            .try_for_each(|x| file.write_all(&x.to_le_bytes()))
                    })
                    .expect("remember an embedding");
                known.insert(key, vector);
            }
            file.flush().expect("remember embeddings");
        }
        let known = self.known.read();
        Ok(texts.iter().map(|t| known[&key(role, t)].clone()).collect())
    }
}

/// A text's key in the file: its role's letter, then the text.
fn key(role: Role, text: &str) -> String {
    let tag = match role {
        Role::Query => 'q',
        Role::Passage => 'p',
    };
    format!("{tag}{text}")
}

impl Embedder for Remembered {
    fn name(&self) -> &str {
        self.model.name()
    }

    fn dims(&self) -> usize {
        self.model.dims()
    }

    fn embed(&self, role: Role, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.vectors(role, texts, false)
    }

    fn embed_background(&self, role: Role, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.vectors(role, texts, true)
    }

    fn fusion(&self) -> Fusion {
        self.model.fusion()
    }
}

/// The embeddings in a file that starts with `head`, up to its last whole record, and
/// where that record ends; `None` when it starts otherwise.
fn read(
    mut file: BufReader<File>,
    head: &str,
    dims: usize,
) -> Option<(HashMap<String, Vec<f32>>, u64)> {
    let mut start = vec![0u8; head.len()];
    file.read_exact(&mut start).ok()?;
    if start != head.as_bytes() {
        return None;
    }
    let (mut known, mut whole) = (HashMap::new(), head.len() as u64);
    let mut len = [0u8; 4];
    while file.read_exact(&mut len).is_ok() {
        let mut text = vec![0u8; u32::from_le_bytes(len) as usize];
        let mut floats = vec![0u8; dims * 4];
        if file.read_exact(&mut text).is_err() || file.read_exact(&mut floats).is_err() {
            break;
        }
        let vector = floats
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        whole += (4 + text.len() + floats.len()) as u64;
        known.insert(String::from_utf8(text).ok()?, vector);
    }
    Some((known, whole))
}

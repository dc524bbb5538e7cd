#!/usr/bin/env python3
"""Reference vectors for the embedder's identity test (issue 43): e5-small-v2 as
`scripts/setup` installs it (`models/e5-small-v2-int8/`), run by ONNX Runtime's Python API
the way the server runs it (candidates.py's Encoder: no padding, truncation at 256 tokens,
one run per text, the attention-masked mean of `last_hidden_state`, L2-normalized), for a
few texts in both roles (`query: ` and `passage: ` prefixes).

No package carries e5's fp32 network, so the reference is this same int8 file on the
reference runtime: the test (`onnx.rs`, `e5_agrees_with_onnx_runtimes_python_api`) checks
that the Rust embedder's tokenizing, prefixes, inputs and pooling match it. Writes
`e5_reference.json` beside this script:

    /tmp/embed-venv/bin/python host/benches/embedders/reference.py
"""

from __future__ import annotations

import json
from pathlib import Path

from candidates import E5, ROOT, Candidate, Encoder, Files, sha256

TEXTS = [
    "Where did I leave the deploy key?",
    "The staging cluster restarts every night at 3 am.",
    "Melanie painted a sunrise over the lake last summer.",
    "Le chat dort sur le canapé, déjà très fatigué.",
    "東京への便は嵐のため二時間遅れた。",
    "SELECT * FROM users WHERE id = 42;",
    "",
    # Past the 256-token limit once prefixed: the truncation must agree too.
    "We discussed the roadmap, hiring and the budget for next quarter. " * 30,
]


def main() -> None:
    directory = "models/e5-small-v2-int8"
    for name, want in (("model.onnx", E5.onnx_sha256), ("tokenizer.json", E5.tokenizer_sha256)):
        got = sha256(ROOT / directory / name)
        if got != want:
            raise SystemExit(f"{directory}/{name}: sha256 {got}, expected {want} (run scripts/setup)")
    e5 = Candidate("e5-small-v2", Files(None, directory, E5.onnx_sha256, E5.tokenizer_sha256),
                   "mean", "query: ", "passage: ")
    encoder = Encoder(e5, Path("/nonexistent"), threads=1)
    out = {
        "model": f"{directory}/model.onnx sha256 {E5.onnx_sha256}",
        "made_by": "host/benches/embedders/reference.py",
        "texts": TEXTS,
        "query": [[round(float(x), 6) for x in v] for v in encoder.embed(TEXTS, e5.query_prefix)],
        "passage": [[round(float(x), 6) for x in v] for v in encoder.embed(TEXTS, e5.passage_prefix)],
    }
    target = Path(__file__).with_name("e5_reference.json")
    target.write_text(json.dumps(out, ensure_ascii=False) + "\n")
    print(f"wrote {target} ({target.stat().st_size} bytes)")


if __name__ == "__main__":
    main()

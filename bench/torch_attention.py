"""The torch backend's attention kernel against torch's SDPA on one GPU, at
several query x key blocks (codegen.attention_tilings), one interleaved run.

    python bench/torch_attention.py [--blocks 64x64,128x64,128x128] [--cases B,H,S,D[,masked][,causal];...]

Run where tilemlir (with the MLIR bindings), torch and an NVIDIA GPU are. For
each case (fp16 Q, K, V of [B, H, S, D]; `masked`: an additive fp16 mask
[B, 1, S, S] with a tenth of the keys at fp16's lowest value, as BERT's) and
block, `scaled_dot_product_attention` is compiled with the torch backend, its
output compared with SDPA in fp32 (the largest error relative to the largest
magnitude), then every variant and SDPA are timed interleaved: ROUNDS rounds
of WARMUP calls and TIMED calls between CUDA events, the median of the
rounds' means.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

ROUNDS, WARMUP, TIMED = 5, 3, 20
CASES = "32,12,512,64,masked;8,16,2048,64;8,16,2048,64,causal;16,16,1024,128;4,32,4096,128,causal"


def run_case(torch, codegen, dynamo, case: str, blocks: list[tuple[int, int]]) -> None:
    F = torch.nn.functional
    fields = case.split(",")
    b, h, s, d = (int(v) for v in fields[:4])
    masked, causal = "masked" in fields[4:], "causal" in fields[4:]
    torch.manual_seed(0)
    q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.float16) for _ in range(3))
    mask = None
    if masked:
        keep = torch.rand(b, 1, 1, s, device="cuda") > 0.1
        mask = torch.where(keep, 0.0, torch.finfo(torch.float16).min).to(torch.float16).expand(b, 1, s, s).contiguous()

    def attend(q, k, v, m):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=m, is_causal=causal)

    with torch.no_grad():
        reference = attend(q.float(), k.float(), v.float(), None if mask is None else mask.float())
        fns = {"sdpa": lambda: attend(q, k, v, mask)}
        for block in blocks:
            # A function of its own per block: dynamo caches a compiled graph per code object.
            code = attend.__code__.replace(co_name=f"attend_{block[0]}x{block[1]}")
            compiled = torch.compile(types.FunctionType(code, attend.__globals__, closure=attend.__closure__),
                                     backend=dynamo.backend)
            codegen.attention_tilings = lambda target, dim, causal, keys=None, block=block: [codegen.AttentionTiling(*block)]
            out = compiled(q, k, v, mask)
            error = ((out.float() - reference).abs().max() / reference.abs().max()).item()
            print(f"{case} {block[0]}x{block[1]}: error {error:.1e}", flush=True)
            fns[f"{block[0]}x{block[1]}"] = lambda compiled=compiled: compiled(q, k, v, mask)
        times = {name: [] for name in fns}
        for _ in range(ROUNDS):
            for name, fn in fns.items():
                for _ in range(WARMUP):
                    fn()
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                for _ in range(TIMED):
                    fn()
                end.record()
                end.synchronize()
                times[name].append(start.elapsed_time(end) / TIMED)
    flops = 4 * b * h * s * s * d / (2 if causal else 1)
    print(f"{case}: " + ", ".join(f"{name} {statistics.median(t) * 1e3:.0f} us ({flops / statistics.median(t) / 1e9:.0f} "
                                  f"TFLOP/s)" for name, t in times.items()), flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", default="64x64,128x64,128x128")
    parser.add_argument("--cases", default=CASES)
    args = parser.parse_args()
    import torch

    from tilemlir.torch_backend import codegen, dynamo

    torch._dynamo.config.cache_size_limit = 64
    blocks = [tuple(int(v) for v in block.split("x")) for block in args.blocks.split(",")]
    for case in args.cases.split(";"):
        run_case(torch, codegen, dynamo, case, blocks)
    return 0


if __name__ == "__main__":
    sys.exit(main())

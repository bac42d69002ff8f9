"""Where a model's GPU time goes through tilemlir's backend: kernels and fusion groups, and each
convolution against cuDNN's.

    python bench/model_profile.py [--model resnet50-b32]

Run where bench/models.py runs (an NVIDIA GPU, torch, torchvision or transformers, tilemlir
importable). The model (bench/models.py's `half_model`) is compiled with
`backend=tilemlir.torch_backend.backend` without CUDA graphs, so that each kernel is seen;
after warm-up, PROFILED forwards run under torch.profiler with every fusion group's call a
`record_function` range named by `group_label` (its kind and operand shapes) and each
operand's preparation (dynamo.GroupKernel.operand: the copies of shifted convolutions'
images) a nested one. Printed, per forward:

* the CUDA kernels by name (time, launches);
* the groups by label: GPU time of their ranges (from a range's first kernel to its last,
  so it includes launch gaps where the host is slower than the kernels) and calls;
* for every convolution, cuDNN's `F.conv2d` of the same image and weight (channels-last
  fp16, no bias, batch norm, activation or residual), timed alone between CUDA events
  (medians of REPEATS), and the ratio.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PROFILED, REPEATS = 3, 15
GROUP, OPERAND = "tm|", "tm-operand|"


def group_label(kind: str, shapes: list[tuple], stride=None, padding=None) -> str:
    """A fusion group's range name: a convolution by its image, weight, stride and padding,
    another group by its kind and first three tensor shapes."""
    if kind == "conv":
        image, weight = shapes[:2]
        return f"conv x{tuple(image)} w{tuple(weight)} s{tuple(stride)} p{tuple(padding)}"
    return f"{kind} {[tuple(s) for s in shapes[:3]]}"


def per_forward(totals: dict[str, tuple[float, int]], forwards: int) -> dict[str, tuple[float, int]]:
    """{name: (us, count)} of `forwards` forwards as one forward's."""
    return {name: (us / forwards, count // forwards) for name, (us, count) in totals.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="resnet50-b32")
    args = parser.parse_args()

    import torch
    import torch.nn.functional as F

    sys.path.insert(0, str(ROOT / "bench"))
    import models

    from tilemlir.torch_backend import backend, dynamo

    model, inputs = models.half_model(torch, args.model)
    compiled = torch.compile(model, backend=backend, options={"cudagraphs": False})
    convolutions = {}
    call, operand = dynamo.GroupKernel.__call__, dynamo.GroupKernel.operand

    def labelled_call(self, *tensors):
        shapes = [t.shape for t in tensors if isinstance(t, torch.Tensor)]
        if self.group.kind == "conv":
            image, weight = (tensors[p] for p in self.operands)
            stride, padding = self.group.anchor.args[3:5]
            label = group_label("conv", [image.shape, weight.shape], stride, padding)
            convolutions.setdefault(label, (image, weight, tuple(stride), tuple(padding)))
        else:
            label = group_label(self.group.kind, shapes)
        with torch.profiler.record_function(GROUP + label):
            return call(self, *tensors)

    def labelled_operand(self, tensor, spec, layout):
        with torch.profiler.record_function(OPERAND + type(layout).__name__):
            return operand(self, tensor, spec, layout)

    with torch.no_grad():
        for _ in range(3):
            compiled(inputs)
        dynamo.GroupKernel.__call__, dynamo.GroupKernel.operand = labelled_call, labelled_operand
        try:
            torch.cuda.synchronize()
            activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
            with torch.profiler.profile(activities=activities) as profile:
                for _ in range(PROFILED):
                    compiled(inputs)
                torch.cuda.synchronize()
        finally:
            dynamo.GroupKernel.__call__, dynamo.GroupKernel.operand = call, operand

    ranges = per_forward({e.key: (e.device_time_total, e.count) for e in profile.key_averages()
                          if e.key.startswith((GROUP, OPERAND))}, PROFILED)
    kernels: dict[str, list] = defaultdict(lambda: [0.0, 0])
    for event in profile.events():
        if event.device_type == torch.autograd.DeviceType.CUDA and not event.name.startswith((GROUP, OPERAND)):
            kernels[event.name[:80]][0] += event.device_time
            kernels[event.name[:80]][1] += 1
    kernels = per_forward({name: tuple(value) for name, value in kernels.items()}, PROFILED)
    print(f"{args.model}: {sum(us for us, _ in kernels.values()):.1f} us of kernels a forward, "
          f"{sum(n for _, n in kernels.values())} launches")
    print("\n| kernel | us | launches |\n|---|---:|---:|")
    for name, (us, count) in sorted(kernels.items(), key=lambda item: -item[1][0]):
        print(f"| `{name}` | {us:.1f} | {count} |")

    def cudnn_us(image, weight, stride, padding) -> float:
        times = []
        for _ in range(REPEATS + 3):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            F.conv2d(image, weight, None, stride, padding)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) * 1000)
        return statistics.median(times[3:])

    print("\n| range | calls | us (ranges) | cuDNN us | ours / cuDNN |\n|---|---:|---:|---:|---:|")
    ours_total = cudnn_total = 0.0
    with torch.no_grad():
        for key, (us, count) in sorted(ranges.items(), key=lambda item: -item[1][0]):
            label = key.split("|", 1)[1]
            if key.startswith(GROUP) and label in convolutions:
                cudnn = cudnn_us(*convolutions[label]) * count
                ours_total, cudnn_total = ours_total + us, cudnn_total + cudnn
                print(f"| {key} | {count} | {us:.1f} | {cudnn:.1f} | {us / cudnn:.2f} |")
            else:
                print(f"| {key} | {count} | {us:.1f} | | |")
    print(f"\nconvolutions: ours {ours_total:.1f} us (ranges), cuDNN's alone {cudnn_total:.1f} us")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

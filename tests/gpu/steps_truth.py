"""Plain PyTorch, no cgtool (issue 36): K consecutive steps of a script in the cgtool contract, eager against the
replay of one CUDA graph of the step, each run from the same state. Prints `TRUTH {json}`.

  python tests/gpu/steps_truth.py SCRIPT.py K

Three warmup steps on a side stream, capture on it with static inputs(3) (torch.cuda.graph(g, stream=side)); the
state (every module's parameters and buffers, optimizer state, plain tensors of setup's dict, the CUDA RNG state)
is saved, eager runs inputs(4)..inputs(3+K), the state is put back, the graph replays with each input copied into
the static one. Eager runs twice: after every step the outputs and the state are compared, and a tensor differs when
it is outside the dtype's tolerance and more than 4x what the two eager runs differ by (nondeterministic kernels);
from the second step on, tensors eager did not repeat are judged together (the run's root-sum-square difference
within 4x eager's own). The first step that differs and its tensors are reported."""

import json
import sys

import torch
from torch.utils._pytree import tree_flatten

from truth_common import load, replay_with, side_stream_warmup, tensors_of

NOISE_FACTOR = 4.0  # replay may differ from eager by 4x what two eager runs differ by (as cgtool)
TOL = {torch.float64: (1e-7, 1e-7), torch.float32: (1e-4, 1e-5), torch.float16: (1e-2, 1e-3),
       torch.bfloat16: (5e-2, 1e-2)}


def differ(a, b):
    if a.shape != b.shape:
        return True
    if not a.is_floating_point():
        return not torch.equal(a, b)
    rtol, atol = TOL.get(a.dtype, (1e-4, 1e-5))
    return not torch.allclose(a.float(), b.float(), rtol=rtol, atol=atol, equal_nan=True)


def main():
    mod = load(sys.argv[1])
    k = int(sys.argv[2]) if len(sys.argv) > 2 else 6
    dev = torch.device("cuda")
    state = mod.setup(dev)
    side = side_stream_warmup(mod, state, dev)
    static = mod.inputs(3, dev)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=side):
        static_out = mod.step(**state, **static)
    torch.cuda.synchronize()
    tensors = tensors_of(state)
    saved = {n: t.detach().clone() for n, t in tensors.items()}
    rng = torch.cuda.get_rng_state()
    inputs = [mod.inputs(4 + j, dev) for j in range(k)]

    def reset():
        with torch.no_grad():
            for n, t in tensors.items():
                t.copy_(saved[n])
        torch.cuda.set_rng_state(rng)

    def outs(value):
        return [t.detach().clone() for t in tree_flatten(value)[0] if isinstance(t, torch.Tensor)]

    def run_eager():
        runs = []
        with torch.cuda.stream(side):
            for inp in inputs:
                o = outs(mod.step(**state, **inp))
                runs.append((o, {n: t.detach().clone() for n, t in tensors.items()}))
        torch.cuda.synchronize()
        return runs

    eager = run_eager()
    reset()
    again = run_eager()  # eager's own run-to-run difference (nondeterministic kernels), step by step
    reset()
    first, bad, worst, noise_max = None, [], 0.0, 0.0
    with torch.cuda.stream(side):
        for j, inp in enumerate(inputs):
            replay_with(graph, static, inp)
            o = outs(static_out)
            (e_out, e_state), (a_out, a_state) = eager[j], again[j]
            names = [f"output[{i}]" for i in range(len(o))]
            triples = list(zip(names, e_out, o, a_out)) + [(n, e_state[n], t.detach(), a_state[n])
                                                           for n, t in tensors.items()]
            bad, noisy = [], []  # noisy: (difference, eager's own difference) of tensors eager did not repeat
            for name, e, r, a in triples:
                if e.is_floating_point() and e.numel() and e.shape == r.shape:
                    d = float((e.float() - r.float()).abs().max())
                    n = float((e.float() - a.float()).abs().max())
                else:
                    d, n = (0.0 if torch.equal(e, r) else float("inf")), 0.0
                if n > 0:
                    noisy.append((d, n))
                worst, noise_max = max(worst, d if d != float("inf") else worst), max(noise_max, n)
                if differ(e, r) and d > NOISE_FACTOR * n:  # outside the tolerance and beyond eager's own noise
                    bad.append((name, n))
            # from step 2 on, tensors eager did not repeat are judged together: the run diverges no more than
            # 4x what eager diverges from itself (root sum of squares), as cgtool's comparator
            if j > 0 and bad and all(n > 0 for _, n in bad):
                if sum(d * d for d, _ in noisy) ** 0.5 <= NOISE_FACTOR * sum(n * n for _, n in noisy) ** 0.5:
                    bad = []
            bad = [name for name, _ in bad]
            if bad:
                first = j + 1
                break
    print("TRUTH " + json.dumps({"script": sys.argv[1], "steps": k, "match": first is None,
                                 "first_differing_step": first, "tensors": bad[:8], "max_abs": worst,
                                 "eager_vs_eager_max_abs": noise_max,
                                 "torch": torch.__version__}), flush=True)


if __name__ == "__main__":
    main()

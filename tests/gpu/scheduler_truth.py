"""Plain PyTorch, no cgtool: a training step with a learning-rate scheduler inside it, eager against the replay of
one CUDA graph of the step, K steps each from the same state. Prints `TRUTH {json}`.

  python tests/gpu/scheduler_truth.py SCRIPT.py K

The script follows cgtool's contract with `model`, `opt` and `sched` in setup's dict. Three warmup steps on a side
stream, capture on it with static inputs(3); then the state is saved: every tensor (tests/gpu/truth_common.py:
tensors_of), the optimizer's hyperparameters (a tensor learning rate copied in place, Python numbers by value) and
the scheduler's state_dict (its Python epoch count), since a scheduler's state is Python as much as tensors. Eager
runs inputs(4)..inputs(3+K) twice from that state (its own run-to-run difference), then the graph replays from it
with each input copied into the static one. After each step the parameters are compared (float32 tolerance, or 4x
eager's own difference); the first step that differs is reported."""

import json
import sys

import torch

from truth_common import load, replay_with, side_stream_warmup, tensors_of


def main():
    mod = load(sys.argv[1])
    k = int(sys.argv[2]) if len(sys.argv) > 2 else 6
    dev = torch.device("cuda")
    state = mod.setup(dev)
    model, opt, sched = state["model"], state["opt"], state["sched"]
    side = side_stream_warmup(mod, state, dev)
    static = mod.inputs(3, dev)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=side):
        mod.step(**state, **static)
    torch.cuda.synchronize()
    tensors = tensors_of(state)
    saved = {n: t.detach().clone() for n, t in tensors.items()}
    groups = [{key: (v.detach().clone() if isinstance(v, torch.Tensor) else v) for key, v in g.items() if key != "params"}
              for g in opt.param_groups]
    sched_saved = sched.state_dict()
    inputs = [mod.inputs(4 + j, dev) for j in range(k)]

    def reset():
        with torch.no_grad():
            for n, t in tensors.items():
                t.copy_(saved[n])
            for g, kept in zip(opt.param_groups, groups):
                for key, v in kept.items():
                    if isinstance(g[key], torch.Tensor):
                        g[key].copy_(v)
                    else:
                        g[key] = v
        sched.load_state_dict(dict(sched_saved))

    def params():
        return [p.detach().clone() for p in model.parameters()]

    def run_eager():
        out = []
        with torch.cuda.stream(side):
            for inp in inputs:
                mod.step(**state, **inp)
                out.append(params())
        torch.cuda.synchronize()
        return out

    eager = run_eager()
    reset()
    again = run_eager()
    reset()
    first, worst, noise = None, [], []
    with torch.cuda.stream(side):
        for j, inp in enumerate(inputs):
            replay_with(graph, static, inp)
            got = params()
            d = max(float((e - r).abs().max()) for e, r in zip(eager[j], got))
            n = max(float((e - a).abs().max()) for e, a in zip(eager[j], again[j]))
            worst.append(d)
            noise.append(n)
            close = all(torch.allclose(e, r, rtol=1e-4, atol=1e-5) for e, r in zip(eager[j], got))
            if first is None and not close and d > 4 * n:
                first = j + 1
    print("TRUTH " + json.dumps({"script": sys.argv[1], "steps": k, "match": first is None,
                                 "first_differing_step": first, "max_abs_by_step": worst,
                                 "eager_vs_eager_by_step": noise, "torch": torch.__version__}), flush=True)


if __name__ == "__main__":
    main()

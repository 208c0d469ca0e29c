"""Plain PyTorch, no cgtool (issue 36): greedy decode with transformers' StaticCache, eager against a CUDA graph of
the one-token step, each from the same state. Prints `TRUTH {json}`.

  python tests/gpu/decode_truth.py SAMPLE.py [TOKENS]     # tokens equal?, µs per token eager and replayed
  python tests/gpu/decode_truth.py SAMPLE.py overflow     # eager steps until the cache's counter runs past its end

The sample is samples/decode/llama_static_cache.py's contract: setup(device) -> {model, cache, token},
inputs(i, device) -> {cache_position}, step(**state, **inputs) writes the next greedy token into `token`.
State (the cache's keys, values and write counters, the token) is saved once and put back before each run."""

import json
import sys
import time

import torch

from truth_common import load, side_stream_warmup


def state_tensors(state):
    out = [state["token"]]
    for layer in state["cache"].layers:
        out += [layer.keys, layer.values, layer.cumulative_length]
    return out


def main():
    mod = load(sys.argv[1])
    dev = torch.device("cuda")
    state = mod.setup(dev)
    if len(sys.argv) > 2 and sys.argv[2] == "overflow":
        counter = state["cache"].layers[0].cumulative_length
        start = int(counter)
        for n in range(1, 1000):
            print(f"step {n}: counter {start + n - 1} of {mod.MAX_LEN} positions", flush=True)
            mod.step(**state, **mod.inputs(n - 1, dev))
            torch.cuda.synchronize()
        return
    tokens = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    saved = [t.clone() for t in state_tensors(state)]

    def reset():
        with torch.no_grad():
            for t, s in zip(state_tensors(state), saved):
                t.copy_(s)

    positions = [mod.inputs(i, dev)["cache_position"] for i in range(tokens)]

    def eager_run():
        out = []
        for p in positions:
            mod.step(**state, cache_position=p)
            out.append(state["token"].clone())
        return out

    # warm up on a side stream, capture on it (the documented recipe, one stream), from the saved state
    side = side_stream_warmup(mod, state, dev)
    reset()
    static_pos = positions[0].clone()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=side):
        mod.step(**state, cache_position=static_pos)
    torch.cuda.synchronize()

    def replay_run():
        out = []
        for p in positions:
            static_pos.copy_(p)
            graph.replay()
            out.append(state["token"].clone())
        return out

    reset()
    eager_tokens = eager_run()
    reset()
    replay_tokens = replay_run()
    torch.cuda.synchronize()
    equal = [bool(torch.equal(a, b)) for a, b in zip(eager_tokens, replay_tokens)]
    best = {"eager": float("inf"), "replay": float("inf")}
    for _ in range(7):  # alternating runs of the whole decode, each from the saved state; each one's best
        for name, run in (("eager", eager_run), ("replay", replay_run)):
            reset()
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            run()
            torch.cuda.synchronize()
            best[name] = min(best[name], (time.perf_counter() - t0) / tokens * 1e6)
    print("TRUTH " + json.dumps({
        "tokens": tokens, "equal": all(equal), "first_differing_token": equal.index(False) + 1 if not all(equal) else None,
        "eager_tokens": [int(t) for t in eager_tokens[:12]], "eager_us": round(best["eager"], 1),
        "replay_us": round(best["replay"], 1), "speedup": round(best["eager"] / best["replay"], 3),
        "torch": torch.__version__, "device": torch.cuda.get_device_name()}), flush=True)


if __name__ == "__main__":
    main()

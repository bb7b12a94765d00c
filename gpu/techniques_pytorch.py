#!/usr/bin/env python3
"""PyTorch's side of `vram4j bench techniques` on the same GPU (issue 10: side by side with PyTorch).

  techniques_pytorch.py run VRAM4J_JSON [--modes eager,compile] [--out pytorch.json]
      Reads what `vram4j bench techniques --json` printed, builds the same models in PyTorch (the MLP's widths; the
      Transformer's blocks, width, heads, context and vocabulary, GPT-2's layout as vram4j's nn.GPT has it), the
      same optimizer, batch and techniques row by row, and measures each row as TechniqueBenchmark does: one step
      to warm up, the peak statistics reset, the timed steps (each ending with loss.item(), so each is waited
      for), then torch.cuda.max_memory_allocated / max_memory_reserved. Each row starts from an emptied cache.
      With --out the whole document is written to that file again after every row (replaced atomically), so a run
      stopped by a time limit leaves the rows it finished; without it, it goes to stdout at the end.
  techniques_pytorch.py compare VRAM4J_JSON PYTORCH_JSON [PYTORCH_JSON...]
      Prints the rows side by side and the issue's targets (MET / MISSED). Several PyTorch files (e.g. an eager run
      and a torch.compile run made apart) are merged model by model, mode by mode. Exits 1 when a model's parameter count
      differs between the two (the models are then not the same) or PyTorch has no results for one; 2, with one
      line naming the file and field, when a file is not what it should be.

`compare` needs no PyTorch; `run` needs PyTorch and a CUDA device for the memory figures (on a machine without one
it runs on the CPU, reports no memory figures, and skips fp16, which autocast does not offer there).
"""
import argparse
import gc
import json
import math
import os
import statistics
import sys
import time


def fail(message):
    """A user mistake: one line naming the file and field, exit status 2."""
    print(f"techniques_pytorch.py: {message}", file=sys.stderr)
    sys.exit(2)


def load(path, what):
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        fail(f"{path}: not a readable {what} JSON file ({e})")
    if not isinstance(doc, dict) or not isinstance(doc.get("models"), list):
        fail(f"{path}: expected a JSON object with a 'models' list ({what})")
    return doc


def field(obj, key, where, kind):
    if not isinstance(obj, dict) or key not in obj or not isinstance(obj[key], kind) or isinstance(obj[key], bool):
        fail(f"{where}: field '{key}' missing or not a {kind.__name__ if isinstance(kind, type) else 'number'}")
    return obj[key]


NUMBER = (int, float)


# ---------------------------------------------------------------------------------------------------------- run

def run(args):
    modes = [m for m in args.modes.split(",") if m]
    for m in modes:
        if m not in ("eager", "compile"):
            fail(f"--modes: unknown mode '{m}'; expected eager and/or compile")
    spec = vram4j_models(args.vram4j)
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    import inspect
    from torch.utils.checkpoint import checkpoint_sequential as _checkpoint_sequential

    def checkpoint_sequential(seq, segments, x):
        """Non-reentrant where this PyTorch has the choice (2.x), as vram4j's Checkpoint recomputes."""
        if "use_reentrant" in inspect.signature(_checkpoint_sequential).parameters:
            return _checkpoint_sequential(seq, segments, x, use_reentrant=False)
        return _checkpoint_sequential(seq, segments, x)

    cuda = torch.cuda.is_available()
    dev = torch.device("cuda" if cuda else "cpu")

    def sdpa_math():
        if not hasattr(F, "scaled_dot_product_attention"):
            return _Nothing()   # PyTorch 1.x: attention() below is the math path already
        try:
            from torch.nn.attention import SDPBackend, sdpa_kernel
            return sdpa_kernel(SDPBackend.MATH)
        except ImportError:   # PyTorch before 2.3
            return torch.backends.cuda.sdp_kernel(enable_flash=False, enable_math=True, enable_mem_efficient=False)

    def attention(q, k, v):
        if hasattr(F, "scaled_dot_product_attention"):
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)
        t = q.size(-2)   # PyTorch 1.x: the math path by hand
        att = (q @ k.transpose(-2, -1)) / math.sqrt(q.size(-1))
        att = att.masked_fill(torch.ones(t, t, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
        return att.softmax(-1) @ v

    class Attention(nn.Module):
        def __init__(self, c, heads):
            super().__init__()
            self.heads = heads
            self.c_attn = nn.Linear(c, 3 * c)
            self.c_proj = nn.Linear(c, c)

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = (p.view(b, t, self.heads, c // self.heads).transpose(1, 2)
                       for p in self.c_attn(x).split(c, dim=2))
            return self.c_proj(attention(q, k, v).transpose(1, 2).reshape(b, t, c))

    class Block(nn.Module):
        def __init__(self, c, heads):
            super().__init__()
            self.ln_1 = nn.LayerNorm(c)
            self.attn = Attention(c, heads)
            self.ln_2 = nn.LayerNorm(c)
            self.c_fc = nn.Linear(c, 4 * c)
            self.gelu = nn.GELU(approximate="tanh")
            self.c_proj = nn.Linear(4 * c, c)

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.c_proj(self.gelu(self.c_fc(self.ln_2(x))))

    class GPT(nn.Module):
        """vram4j's nn.GPT: token and position embeddings, pre-norm blocks, final norm, untied head, no dropout."""

        def __init__(self, vocab, context, layers, width, heads, segments):
            super().__init__()
            self.segments = segments
            self.wte = nn.Embedding(vocab, width)
            self.wpe = nn.Embedding(context, width)
            self.h = nn.Sequential(*[Block(width, heads) for _ in range(layers)])
            self.ln_f = nn.LayerNorm(width)
            self.lm_head = nn.Linear(width, vocab, bias=False)

        def forward(self, idx):
            x = self.wte(idx) + self.wpe(torch.arange(idx.size(1), device=idx.device))
            if self.segments and self.training:
                x = checkpoint_sequential(self.h, min(self.segments, len(self.h)), x)
            else:
                x = self.h(x)
            return self.lm_head(self.ln_f(x))

    class Mlp(nn.Module):
        """vram4j's TensorMlp: Linear layers with ReLU between them."""

        def __init__(self, widths, segments):
            super().__init__()
            self.segments = segments
            layers = []
            for i in range(len(widths) - 1):
                if i > 0:
                    layers.append(nn.ReLU())
                layers.append(nn.Linear(widths[i], widths[i + 1]))
            self.layers = nn.Sequential(*layers)

        def forward(self, x):
            if self.segments and self.training:
                return checkpoint_sequential(self.layers, min(self.segments, len(self.layers)), x)
            return self.layers(x)

    def build(cfg, opts):
        if cfg["kind"] == "transformer":
            return GPT(cfg["vocabulary"], cfg["block_size"], cfg["layers"], cfg["hidden"], cfg["heads"],
                       opts["checkpoint"])
        return Mlp(cfg["widths"], opts["checkpoint"])

    def batch(cfg, size, gen):
        if cfg["kind"] == "transformer":
            tokens = torch.randint(cfg["vocabulary"], (size, cfg["block_size"] + 1), generator=gen)
            return tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()
        return (torch.randn(size, cfg["widths"][0], generator=gen),
                torch.randint(cfg["widths"][-1], (size,), generator=gen))

    def optimizer(cfg, params):
        if cfg["optimizer"] == "adamw":
            return torch.optim.AdamW(params, lr=cfg["lr"], betas=(0.9, 0.999), eps=1e-8,
                                     weight_decay=cfg["weight_decay"])
        return torch.optim.SGD(params, lr=cfg["lr"], momentum=cfg["momentum"], weight_decay=cfg["weight_decay"])

    def profiled(opts, mode):
        """The row --profile-out asks for: eager bf16 autocast, nothing else, fused attention."""
        return bool(args.profile_out) and cuda and mode == "eager" and opts["amp"] == "bf16" \
            and not opts["checkpoint"] and opts["accumulate"] == 1 and opts["attention"] != "math"

    def profile_step(step, what):
        """One more step under torch.profiler; its GPU time by kernel, largest first, appended to --profile-out."""
        try:
            from torch.profiler import profile, ProfilerActivity
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                step()
                torch.cuda.synchronize()
            averages = prof.key_averages()
            try:
                table = averages.table(sort_by="device_time_total", row_limit=25)
            except Exception:   # PyTorch before the name device_time_total
                table = averages.table(sort_by="cuda_time_total", row_limit=25)
        except Exception as e:   # the profile is extra: a failure is reported, not fatal
            table = f"torch.profiler failed: {type(e).__name__}: {e}"
        with open(args.profile_out, "a", encoding="utf-8") as f:
            f.write(f"# PyTorch {torch.__version__}: GPU time by kernel in one step of {what} (torch.profiler)\n")
            f.write(table + "\n")

    def measure(cfg, row, mode, steps):
        opts = row["options"]
        amp = opts["amp"]
        if amp == "fp16" and not cuda:
            return {"error": "fp16 autocast needs a CUDA device"}
        gc.collect()
        if cuda:
            torch.cuda.empty_cache()
        torch.manual_seed(0)
        model = build(cfg, opts).to(dev)
        net = model
        if mode == "compile":
            if not hasattr(torch, "compile"):
                return {"error": f"torch.compile is not in PyTorch {torch.__version__}"}
            net = torch.compile(model)
        opt = optimizer(cfg, model.parameters())
        scaler = None
        if amp == "fp16":
            scaler = torch.amp.GradScaler("cuda") if hasattr(torch, "amp") and hasattr(torch.amp, "GradScaler") \
                else torch.cuda.amp.GradScaler()
        dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(amp)
        x_host, y_host = batch(cfg, opts["batch_size"], torch.Generator().manual_seed(1))
        accumulate = opts["accumulate"]

        def step():
            for _ in range(accumulate):
                x = x_host.to(dev)
                y = y_host.to(dev)
                with torch.autocast(dev.type, dtype=dtype, enabled=dtype is not None):
                    logits = net(x)
                    loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1))
                loss.item()                                       # as vram4j's step: the loss and the
                (logits.argmax(-1) == y).sum().item()             # correct count reach the host
                scaled = loss / accumulate if accumulate > 1 else loss
                (scaler.scale(scaled) if scaler else scaled).backward()
            if scaler:
                scaler.step(opt)
                scaler.update()
            else:
                opt.step()
            opt.zero_grad(set_to_none=True)

        model.train()
        try:
            with (sdpa_math() if opts["attention"] == "math" else _Nothing()):
                step()
                if mode == "compile":
                    step()                                        # a second step: recompiles happen here
                if cuda:
                    torch.cuda.synchronize()
                    torch.cuda.reset_peak_memory_stats()
                times = []
                for _ in range(steps):
                    t0 = time.perf_counter()
                    step()
                    if cuda:
                        torch.cuda.synchronize()
                    times.append(time.perf_counter() - t0)
                if profiled(opts, mode):
                    profile_step(step, f"{cfg['kind']} {row['technique']}")
        except Exception as e:   # an OOM or a compile failure is a result of the row, not the end of the run
            del model, net, opt
            return {"error": f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300]}
        out = {"step_seconds_median": statistics.median(times), "step_seconds": times}
        if cuda:
            out["peak_allocated_bytes"] = torch.cuda.max_memory_allocated()
            out["peak_reserved_bytes"] = torch.cuda.max_memory_reserved()
        del model, net, opt, scaler
        return out

    steps = field(spec, "steps", args.vram4j, int)
    if steps < 1:
        fail(f"{args.vram4j}: field 'steps' must be at least 1, got {steps}")
    result = {"torch": torch.__version__, "device": torch.cuda.get_device_name(0) if cuda else "cpu",
              "steps": steps, "models": []}
    for m in spec["models"]:
        cfg = m["config"]
        model_out = {"model": m["model"],
                     "parameters": sum(p.numel() for p in build(cfg, {"checkpoint": 0}).parameters()),
                     "modes": {}}
        for mode in modes:
            rows = []
            for row in m["rows"]:
                r = {"technique": row["technique"]}
                r.update(measure(cfg, row, mode, steps))
                print(f"{model_out['model']:<12} {mode:<8} {r['technique']:<44} "
                      + (f"{r['step_seconds_median']:.4f} s" if "error" not in r else r["error"]),
                      file=sys.stderr, flush=True)
                rows.append(r)
                model_out["modes"][mode] = rows
                save(result, model_out, args.out)
        if model_out not in result["models"]:
            result["models"].append(model_out)
    if args.out:
        save(result, None, args.out)
    else:
        json.dump(result, sys.stdout, indent=1)
        print()


def save(result, current, out):
    """Writes the document so far, the model being measured included, to out (when given) by atomic rename."""
    if not out:
        return
    doc = dict(result, models=result["models"] + ([current] if current is not None and current not in result["models"] else []))
    tmp = out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(tmp, out)


class _Nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


# ------------------------------------------------------------------------------------------------------ compare

def size(n):
    if n is None:
        return "-"
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return f"{n / (1 << shift):.2f} {unit}"
    return f"{n} B"


OPTIONS = {"batch_size": int, "accumulate": int, "checkpoint": int, "amp": str, "attention": str}


def vram4j_models(path):
    """The models of a vram4j bench techniques JSON file, every field compare reads checked first."""
    doc = load(path, "vram4j bench techniques")
    for i, m in enumerate(doc["models"]):
        where = f"{path}: models[{i}]"
        field(m, "model", where, str)
        cfg = field(m, "config", where, dict)
        w = where + ".config"
        kind = field(cfg, "kind", w, str)
        field(cfg, "parameters", w, int)
        if kind == "transformer":
            for key in ("vocabulary", "block_size", "layers", "hidden", "heads"):
                field(cfg, key, w, int)
        elif kind == "mlp":
            widths = field(cfg, "widths", w, list)
            if len(widths) < 2 or not all(isinstance(x, int) and x > 0 for x in widths):
                fail(f"{w}: field 'widths' must list at least two positive layer widths")
        else:
            fail(f"{w}: field 'kind' is '{kind}'; expected mlp or transformer")
        if field(cfg, "optimizer", w, str) not in ("sgd", "adamw"):
            fail(f"{w}: field 'optimizer' is '{cfg['optimizer']}'; expected sgd or adamw")
        for key in ("lr", "momentum", "weight_decay"):
            field(cfg, key, w, NUMBER)
        rows = field(m, "rows", where, list)
        if not rows:
            fail(f"{where}: no rows")
        for j, r in enumerate(rows):
            w = f"{where}.rows[{j}]"
            field(r, "technique", w, str)
            for key in ("step_seconds_median",):
                field(r, key, w, NUMBER)
            for key in ("peak_allocated_bytes", "peak_reserved_bytes", "peak_activation_bytes"):
                field(r, key, w, int)
            opts = field(r, "options", w, dict)
            for key, kind in OPTIONS.items():
                field(opts, key, w + ".options", kind)
    return doc


def compare(args):
    v = vram4j_models(args.vram4j)
    torch_models = {}
    p = None
    for path in args.pytorch:
        doc = load(path, "techniques_pytorch.py run")
        p = p or doc
        for i, m in enumerate(doc["models"]):
            where = f"{path}: models[{i}]"
            field(m, "parameters", where, int)
            modes = field(m, "modes", where, dict)
            name = field(m, "model", where, str)
            if name not in torch_models:
                torch_models[name] = {"model": name, "parameters": m["parameters"], "modes": {}}
            elif torch_models[name]["parameters"] != m["parameters"]:
                fail(f"{where}: parameters {m['parameters']:,} differ from another PyTorch file's "
                     f"{torch_models[name]['parameters']:,} for model '{name}'")
            torch_models[name]["modes"].update(modes)
    print(f"== vram4j on {v.get('device')} vs PyTorch {p.get('torch')} on {p.get('device')}, "
          f"median of {v.get('steps')} steps")
    mismatch = False
    targets = []
    for m in v["models"]:
        name, cfg, rows = m["model"], m["config"], m["rows"]
        t = torch_models.get(name)
        print(f"\n{name}: {m.get('description', '')}")
        if t is None:
            print("  no PyTorch results for this model")
            mismatch = True
            continue
        same = cfg["parameters"] == t["parameters"]
        mismatch |= not same
        print(f"  parameters: vram4j {cfg['parameters']:,}, PyTorch {t['parameters']:,}"
              + ("" if same else "   MISMATCH: not the same model"))
        eager = {r.get("technique"): r for r in t["modes"].get("eager", [])}
        compiled = {r.get("technique"): r for r in t["modes"].get("compile", [])}
        fmt = "  {:<44} {:>7} {:>9} {:>9} {:>6} {:>9} {:>11} {:>11} {:>11} {:>11} {:>7}"
        print(fmt.format("technique", "batch", "vram4j s", "eager s", "x", "compile s", "alloc v4j", "alloc torch",
                         "resv v4j", "resv torch", "resv x"))
        for r in rows:
            tech, opts, step = r["technique"], r["options"], r["step_seconds_median"]
            e, c = eager.get(tech, {}), compiled.get(tech, {})
            es, cs = e.get("step_seconds_median"), c.get("step_seconds_median")
            ratio = step / es if es else None
            resv = e.get("peak_reserved_bytes")
            resv_ratio = r["peak_reserved_bytes"] / resv if resv else None
            batch = f"{opts['batch_size']}x{opts['accumulate']}" if opts["accumulate"] > 1 else str(opts["batch_size"])
            print(fmt.format(tech[:44], batch, f"{step:.4f}", f"{es:.4f}" if es else e.get("error", "-")[:9],
                             f"{ratio:.2f}" if ratio else "-", f"{cs:.4f}" if cs else c.get("error", "-")[:9],
                             size(r["peak_allocated_bytes"]), size(e.get("peak_allocated_bytes")),
                             size(r["peak_reserved_bytes"]), size(resv), f"{resv_ratio:.2f}" if resv_ratio else "-"))
            for key in ("error",):
                if e.get(key) or c.get(key):
                    print(f"    PyTorch: {'eager ' + e[key] if e.get(key) else ''} "
                          f"{'compile ' + c[key] if c.get(key) else ''}".rstrip())
            if ratio:
                targets.append((f"{name} {tech}: step time <= 1.5x PyTorch eager", ratio <= 1.5, f"{ratio:.2f}x"))
            if resv_ratio:
                targets.append((f"{name} {tech}: peak reserved within 10% of PyTorch's", abs(resv_ratio - 1) <= 0.10,
                                f"{100 * (resv_ratio - 1):+.1f}%"))
        targets += technique_targets(name, cfg, rows)
    print()
    for what, met, measured in targets:
        print(f"  target {what + ':':<92} {'MET' if met else 'MISSED':<6} {measured}")
    return 1 if mismatch else 0


def technique_targets(name, cfg, rows):
    """The issue's targets that compare vram4j's own rows: checkpointing, bf16 speed, fused attention's peak."""
    def row(amp="off", checkpoint=False, accumulate=1, attention=None):
        for r in rows:
            o = r["options"]
            if (o["amp"] == amp and (o["checkpoint"] > 0) == checkpoint and o["accumulate"] == accumulate
                    and (attention is None or o["attention"] == attention)):
                return r
        return None

    out = []
    base = row(attention=rows[0]["options"]["attention"])
    if base is None:
        return out
    ckpt = row(checkpoint=True, attention=base["options"]["attention"])
    if ckpt and base["peak_activation_bytes"] > 0:
        cut = 1 - ckpt["peak_activation_bytes"] / base["peak_activation_bytes"]
        up = ckpt["step_seconds_median"] / base["step_seconds_median"] - 1
        out.append((f"{name} checkpointing: <= +35% step time for >= 60% less activation memory",
                    cut >= 0.6 and up <= 0.35, f"{-100 * cut:.0f}% activations, {100 * up:+.0f}% step time"))
    if cfg["kind"] == "transformer":
        bf = row(amp="bf16", attention=base["options"]["attention"])
        if bf:
            faster = 1 - bf["step_seconds_median"] / base["step_seconds_median"]
            out.append((f"{name} bf16 at least 25% faster than float32 (the issue: GPT-2-small)", faster >= 0.25,
                        f"{100 * faster:.0f}% faster"))
        unfused = row(attention="math")
        if unfused is not None and unfused is not base:
            cut = 1 - base["peak_allocated_bytes"] / unfused["peak_allocated_bytes"]
            out.append((f"{name} fused attention's peak >= 30% below unfused (context {cfg.get('block_size')})",
                        cut >= 0.3, f"-{100 * cut:.1f}%"))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="measure the rows of a vram4j bench techniques JSON file in PyTorch")
    r.add_argument("vram4j")
    r.add_argument("--modes", default="eager,compile", help="eager and/or compile (default: eager,compile)")
    r.add_argument("--out", help="write the results here after every row (default: stdout at the end)")
    r.add_argument("--profile-out", help="append torch.profiler's GPU time by kernel of one eager bf16 step here")
    c = sub.add_parser("compare", help="print vram4j and PyTorch side by side with the issue's targets")
    c.add_argument("vram4j")
    c.add_argument("pytorch", nargs="+")
    args = ap.parse_args()
    sys.exit(run(args) if args.cmd == "run" else compare(args))


if __name__ == "__main__":
    main()

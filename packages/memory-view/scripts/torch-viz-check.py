# PyTorch's own memory_viz helpers over snapshots nuvec-memory-view exported (--export-torch): each is loaded
# with pickle and given to torch.cuda._memory_viz's trace(), segsum() and the plots' HTML; a report of what each
# did goes to $OUT (default: the current folder). `memory` and `segments` fetch a flame graph script from the
# network and fail where there is none. Usage (where PyTorch is installed): python3 torch-viz-check.py FOLDER
import glob, io, json, os, pickle, sys, contextlib
import torch
from torch.cuda import _memory_viz as mv
out = os.environ.get("OUT", ".")
report = {"torch": torch.__version__}
for path in sorted(glob.glob(os.path.join(sys.argv[1] if len(sys.argv) > 1 else ".", "*.pickle"))):
    name = os.path.basename(path)
    with open(path, "rb") as f:
        snapshot = pickle.load(f)
    entry = {}
    for fn in ["segsum", "trace", "memory", "segments", "trace_plot", "segment_plot"]:
        f = getattr(mv, fn, None)
        if f is None:
            entry[fn] = "absent"
            continue
        buf = io.StringIO()
        try:
            with contextlib.redirect_stdout(buf):
                result = f(snapshot)
            text = result if isinstance(result, str) else buf.getvalue()
            entry[fn] = {"ok": True, "chars": len(text or ""), "head": (text or "")[:300]}
            if fn == "trace_plot":
                with open(os.path.join(out, name + ".trace.html"), "w") as h:
                    h.write(text)
        except Exception as error:
            entry[fn] = {"ok": False, "error": repr(error)[:500]}
    report[name] = entry
print(json.dumps(report, indent=1)[:11000])
with open(os.path.join(out, "report.json"), "w") as f:
    json.dump(report, f, indent=1)

"""The line model: one physical log line, stripped of colour, paste wrappers and vLLM's header.

A vLLM record looks like (``docs/vllm-log-lines.md`` §1)::

    [wrappers] [(<process> pid=N) ][[Stage-k] ]LEVEL MM-DD HH:MM:SS [file.py:NNN] message

Wrappers are what the tools people paste from add in front: docker-compose ``name-1  | ``,
RFC 3339 container timestamps, ``journalctl``'s ``Mon DD HH:MM:SS host unit[pid]: ``,
``kubectl logs --prefix``'s ``[pod/name/container] ``, a CI tool's ``[name] `` tag and
``[2025-12-13T19:54:35Z] `` timestamp, TorchServe's ``MODEL_LOG - ``, markdown quote and list
markers (and the ``▎`` quote bars chat tools paste), indentation and right-padding.
``file.py:NNN`` is kept as text but no rule ever keys on it: the numbers change with every
release.

A process prefix may be nested: an engine core wraps the stdout of the workers it started, so a
worker's line reads ``(EngineCore_DP1 pid=…) (Worker_DP1_TP1_EP3 pid=…) INFO …``.  The line's
process is the innermost one, the process that printed it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Raw ESC sequences and the caret notation some pastes show instead (``^[[0;36m``).
_ANSI = re.compile(r"(?:\x1b|\^\[)\[[0-9;]*[A-Za-z]")

# One wrapper at the start of the line; applied repeatedly.  Group ``year`` (when present)
# carries a full date that vLLM's own MM-DD timestamp lacks.
_WRAPPERS = [
    # markdown quote; the bars GitHub, Slack and chat clients paste for a quote ("▎ ", "│ ", "┃ ")
    re.compile(r"(?:[>\u258e\u2502\u2503][ \t]?)+"),
    re.compile(r"[-*+] (?=\S)"),  # markdown list marker
    # RFC 3339 container/runtime timestamp (docker --timestamps, kubectl --timestamps, runpod),
    # optionally followed by TorchServe's "[LEVEL ] W-9000-model-stdout MODEL_LOG - ".
    re.compile(
        r"(?P<year>\d{4})-(?P<mon>\d\d)-(?P<day>\d\d)T\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?"
        r"(?:[ \t]+\[\w+ *\] \S+ MODEL_LOG -)?[ \t]+"
    ),
    # "YYYY-MM-DD HH:MM:SS | host | " (Ray dashboards, FastChat's stderr relay)
    re.compile(r"(?P<year>\d{4})-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)?(?: \| [^|]*)* \| "),
    # journalctl: "Mar 05 12:00:01 host vllm[123]: "
    re.compile(r"[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \S+ [^\s:\[]+(?:\[\d+\])?: "),
    re.compile(r"\[pod/[^\]\s]+(?: [^\]]*)?\] "),  # kubectl logs --prefix
    # a CI log's timestamp (Buildkite "[2025-12-13T19:54:35Z] ")
    re.compile(r"\[(?P<year>\d{4})-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?\][ \t]+"),
    # a CI tool's or process manager's tag ("[vllm-server] "); vLLM's own "[Stage-k] " comes after
    # the process prefix, so one at the start of a line is a wrapper's too
    re.compile(r"\[[A-Za-z][\w.-]*\][ \t]+"),
    re.compile(r"[A-Za-z0-9][\w.-]*[ \t]+\| ?"),  # docker compose "name-1  | "
]

# "(Worker_TP1 pid=147) ", "(VllmWorker rank=5 pid=3073) ", "(RayWorkerWrapper pid=1, ip=10.0.0.1) ".
# A paste can lose the opening parenthesis, so it is optional at the start of the line.
# The name starts a word ("(?<!\w)"): searched for in a line of N word characters, a match is
# tried from the word's start only, not from each of its N characters (N^2 steps: 18 s at 32 kB).
# A pid of more than 18 digits (out of any column's range; int() refuses past 4,300) is no prefix.
# The ip's text stops at a parenthesis either way: tried from each "(" of a line of "(a pid=1, ip=",
# "[^)]*" ran to the line's end every time (quadratic).
_PROCESS = re.compile(
    r"\(?(?<!\w)(?P<proc>[A-Za-z_][\w]*(?: (?:rank=\d+|[A-Z]+\d+(?:_[A-Z]+\d+)*))?) pid=(?P<pid>\d{1,18})"
    r"(?:, ip=[^()]*)?\) ?"
)
# The same, further into a line without vLLM's header: only with its parentheses, after the start
# or a space, and (when nested) the run of prefixes up to the last one.
_WRAPPED_PROCESS = re.compile(r"(?:^|(?<=\s))(?:\(" + _PROCESS.pattern[3:] + r")+")
_STAGE = re.compile(r"\[Stage-\d+\] ")  # vllm-omni puts a stage tag after the prefix

# vLLM's header, every release (reference §1.4): '[' before file:line only from 0.8.0.
_HEADER = re.compile(
    r"(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL) (?P<ts>\d\d-\d\d \d\d:\d\d:\d\d)(?:\.\d+)? "
    r"\[?(?P<file>[^\s:\[\]]+):(?P<lineno>\d+)\] ?"
)
_BARE_STARTS = ("(", "INFO ", "DEBUG ", "WARNING ", "ERROR ", "CRITICAL ")
_RANK_EQ = re.compile(r"rank=(\d+)")
# The parallel groups a worker's name carries ("Worker_DP0_PP1_TP0_EP0", "VllmWorker PP0_TP1"),
# printed outermost first: DP, PP, PCP, TP, DCP, EP (ref §1.2).
_GROUP = re.compile(r"(?:^|[_ ])(DP|PP|PCP|TP|DCP|EP)(\d+)(?=_|$)")
# The group whose index is the worker's rank, innermost first: EP if named (unique per worker
# across the DP engines), else TP / DCP / PCP, else PP, else DP (facts.md, "rank").
_RANK_GROUPS = ("EP", "DCP", "TP", "PCP", "PP", "DP")
# Processes that speak for the whole engine, not a worker: their index is no rank.
_ENGINE_WIDE = ("EngineCore", "APIServer", "ApiServer", "DPSupervisor", "MainProcess")
_REPEATED = re.compile(r" \[repeated \d+x across cluster\]$")  # Ray's de-duplication suffix


@dataclass(slots=True)
class Line:
    number: int  # 1-based, in the file as given
    raw: str  # the physical line without its "\n" (a "\r" before it is kept: the evidence is exact)
    message: str  # what the rules match: the text after every prefix
    process: str | None = None  # "Worker_TP1", "EngineCore", "VllmWorker rank=5", ...
    pid: int | None = None
    rank: int | None = None
    level: str | None = None
    timestamp: str | None = None  # vLLM's "MM-DD HH:MM:SS" (no year)
    year: int | None = None  # from a wrapper that printed one, else None
    source_file: str | None = None  # "gpu_worker.py" — evidence only, never matched on
    offset: int | None = None  # byte offset of the line in the input, when the scanner knows it

    @property
    def has_prefix(self) -> bool:
        return self.process is not None or self.level is not None


def rank_of(process: str) -> int | None:
    """The worker a process prefix names: ``Worker_TP1`` -> 1, ``VllmWorker rank=5`` -> 5,
    ``Worker_PP2`` -> 2, ``Worker_DP6_EP6`` -> 6, ``Worker_DP0_TP3_EP3`` -> 3,
    ``VllmWorker PP0_TP1`` -> 1; None for an engine-wide process (``EngineCore_DP1``,
    ``APIServer``) and for a name without an index (``RayWorkerWrapper``, ``Worker``)."""
    m = _RANK_EQ.search(process)
    if m:
        return _index(m.group(1))
    if process.startswith(_ENGINE_WIDE):
        return None
    groups = dict(_GROUP.findall(process))
    for group in _RANK_GROUPS:
        if group in groups:
            return _index(groups[group])
    return None


def _index(printed: str) -> int | None:
    """A rank as printed; None past 18 digits (no column holds it, int() refuses past 4,300)."""
    return int(printed) if len(printed) <= 18 else None


def strip_colour(text: str) -> str:
    return _ANSI.sub("", text) if ("\x1b" in text or "^[" in text) else text


def parse_line(number: int, raw: str) -> Line:
    """Build the Line for one physical line (``raw`` may still end in '\\r' or '\\n')."""
    raw = raw.rstrip("\n")
    text = strip_colour(raw).rstrip()
    text = _REPEATED.sub("", text)
    year = None
    # peel wrappers off the front until none applies (a line that starts like vLLM's own has none)
    text = text.lstrip()
    changed = not text.startswith(_BARE_STARTS)
    while changed and text:
        changed = False
        for wrapper in _WRAPPERS:
            m = wrapper.match(text)
            if m and m.end() > 0:
                if "year" in wrapper.groupindex and m.group("year"):
                    year = int(m.group("year"))
                text = text[m.end() :].lstrip()
                changed = True
                break
    line = Line(number=number, raw=raw, message=text, year=year)
    # nested prefixes: the engine core's wrapper first, the worker that printed last
    m = _PROCESS.match(text)
    while m:
        _set_process(line, m)
        text = text[m.end() :]
        line.message = text.strip()
        m = _PROCESS.match(text) if text.startswith("(") else None
    s = _STAGE.match(text)
    if s:
        text = text[s.end() :]
    h = _HEADER.match(text)
    if h is None:
        # an unknown wrapper in front: find the header further in, and a process prefix before it
        h = _HEADER.search(text)
        if line.process is None:
            p = None
            if h is not None:
                for p in _PROCESS.finditer(text, 0, h.start()):  # noqa: B007 - the last one is wanted
                    pass
            else:  # a traceback or failure line, behind a wrapper no rule knows
                for p in _WRAPPED_PROCESS.finditer(text):  # noqa: B007 - the last one is wanted
                    pass
                if p is not None:
                    text = text[p.end() :]
            if p is not None:
                _set_process(line, p)
    if h is not None:
        line.level = h.group("level")
        line.timestamp = h.group("ts")
        line.source_file = h.group("file")
        line.message = text[h.end() :].strip()
    else:
        line.message = text.strip()
    return line


def _set_process(line: Line, m: re.Match[str]) -> None:
    line.process = m.group("proc")
    line.pid = int(m.group("pid"))
    line.rank = rank_of(line.process)


# A traceback frame in a file of the vllm package, in the forms people paste: Python's
# '  File "…/site-packages/vllm/entrypoints/llm.py", line 297, in __init__', IPython 8's
# 'File ~/…/site-packages/vllm/entrypoints/llm.py:297, in LLM.__init__(…)' and Colab's
# '[/usr/…/dist-packages/vllm/utils.py](https://localhost:8080/#) in inner(…)'.
# Linear in the text's length (issue 38, item 16): the path stops at a "[" as at a "]", so the paths
# tried from two starts never overlap (from each "[" of a run of them, "[^\s"\]]*" ran to the run's
# end: 128 kB of "[" took minutes), and its part up to "/vllm/" is atomic — the last "/vllm/" before
# the path's end, never retried at each earlier one (a path of "/vllm//vllm/…" was cubic).
VLLM_FRAME = r'(?:File "?|\[)(?>[^\s"\[\]]*/vllm/)[^\s"\[\]]*\.py(?:", line \d+|:\d+, in |\]\()'

# A cheap test used before building Line objects: does a block hold any vLLM line at all (a
# header, a process prefix as on traceback and tqdm lines, or a frame of vLLM's code in a bare
# traceback)?  Message-only text is told by its wordings instead (``Parse``).  The pattern's
# text: the readers compile it for bytes, and nothing compiles it for text at every start-up.
VLLM_LINE_SEARCH = (_HEADER.pattern + r"|\([A-Za-z_][\w]*(?: [\w=]+)? pid=\d+(?:, ip=[^()]*)?\)|"
                    + VLLM_FRAME)


# The shape nearly every line of a served log has, "(APIServer pid=1) INFO 10-01 09:00:10
# [loggers.py:271] Engine 000: …" (or the same without the process prefix), read with one match.
# Only lines on which parse_line has nothing else to do qualify: ASCII, no colour, no wrapper, no
# Ray suffix, no fractional seconds, nothing to strip at either end (``plain_candidate``).  Groups:
# process, pid, level, timestamp, file; the message starts where the match ends.  Rules with a
# ``FastShape`` append their message pattern to it, so a served log's stats line is read — line
# model and figures — in one match.  Tests hold all of it to parse_line on every fixture line.
PLAIN_SHAPE = (
    r"(?:\(([A-Za-z_]\w*) pid=(\d{1,18})\) )?(DEBUG|INFO|WARNING|ERROR|CRITICAL) "
    r"(\d\d-\d\d \d\d:\d\d:\d\d) \[([^\s:\[\]]+):\d+\] (?=[!-~])"
)
PLAIN_GROUPS = 5
_PLAIN = re.compile(PLAIN_SHAPE)
_RANKS: dict[str, int | None] = {}


def plain_candidate(raw: bytes) -> bool:
    """Whether a raw line may be in the plain shape: what ``PLAIN_SHAPE`` cannot tell by itself."""
    # find(27): no ESC; "^[" looked for only where a "^" is (rare): both cheaper than `in`
    return bool(raw) and raw[-1] > 32 and raw.isascii() and raw.find(27) < 0 \
        and (raw.find(94) < 0 or b"^[" not in raw) and not raw.endswith(b"cluster]")


def fast_line(number: int, raw: bytes) -> Line | None:
    """The Line parse_line would build, for a line in vLLM's plain shape; None for any other."""
    if not plain_candidate(raw):
        return None
    text = raw.decode("ascii")
    m = _PLAIN.match(text)
    if m is None:
        return None
    proc, pid, level, ts, source_file = m.groups()
    if proc is None:
        return Line(number, text, text[m.end():], None, None, None, level, ts, None, source_file)
    rank = _RANKS.get(proc, -1)
    if rank == -1:
        rank = _RANKS[proc] = rank_of(proc)
    return Line(number, text, text[m.end():], proc, int(pid), rank, level, ts, None, source_file)

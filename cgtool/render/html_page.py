"""The frame every HTML report shares: escaping, the stylesheet, the pan-and-zoom script, sections, tabs, tables.

A page is one self-contained file: styles and script are inlined, and a Content-Security-Policy forbids every
fetch, so the page never reaches the network when it is opened. Everything user-derived goes through `esc`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from html import escape as _escape

# Nothing may be fetched: no URL, no font, no image outside the page (data: images only).
CSP = ("default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:; "
       "form-action 'none'; base-uri 'none'")

CSS = """
:root{--fg:#212529;--muted:#6c757d;--line:#dee2e6;--bg:#f8f9fa;--err:#c92a2a;--warn:#b35c00;--info:#1864ab;
--ok:#2b8a3e;--code:#f1f3f5;--accent:#1c7ed6}
*{box-sizing:border-box}
body{font:14px/1.45 -apple-system,"Segoe UI",Helvetica,Arial,sans-serif;color:var(--fg);margin:0;background:#fff}
header.top{background:#212529;color:#f8f9fa;padding:14px 24px}
header.top h1{font-size:18px;margin:0 0 4px 0;font-weight:600;word-break:break-all}
header.top .env{color:#adb5bd;font-size:12px}
main{padding:12px 24px 40px;max-width:1500px}
.verdict{margin:12px 0;padding:10px 14px;border-radius:6px;font-weight:600;border-left:6px solid}
.verdict.ok{background:#ebfbee;border-color:var(--ok);color:#1b5e20}
.verdict.bad{background:#fff5f5;border-color:var(--err);color:#8b1a1a}
.verdict.cpu{background:#fff9db;border-color:#f59f00;color:#6b4a00}
.cards{display:flex;flex-wrap:wrap;gap:10px;margin:10px 0}
.card{border:1px solid var(--line);border-radius:6px;padding:8px 12px;min-width:150px;background:var(--bg)}
.card b{display:block;font-size:18px}
.card span{color:var(--muted);font-size:12px}
details.sec{border:1px solid var(--line);border-radius:6px;margin:12px 0;background:#fff}
details.sec>summary{cursor:pointer;padding:8px 12px;background:var(--bg);border-radius:6px;font-weight:600;font-size:15px}
details.sec>.body{padding:8px 14px 12px}
.count{color:var(--muted);font-weight:400;font-size:13px;margin-left:6px}
table.t{border-collapse:collapse;margin:6px 0;font-size:13px}
table.t th,table.t td{border-bottom:1px solid var(--line);padding:3px 10px 3px 0;text-align:left;vertical-align:top}
table.t td.n,table.t th.n{text-align:right;font-variant-numeric:tabular-nums}
table.t th{color:var(--muted);font-weight:600}
code,pre{font:12.5px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
pre{background:var(--code);padding:6px 10px;border-radius:4px;overflow-x:auto;margin:4px 0;white-space:pre-wrap}
.finding{border-left:4px solid var(--line);padding:6px 10px;margin:8px 0;background:#fff}
.finding.error{border-color:var(--err)}.finding.warning{border-color:#f59f00}.finding.info{border-color:#4dabf7}
.finding .msg{margin:2px 0}
.finding .fix{color:#0b7285}
.finding .lib{color:var(--muted);font-size:12px}
.sev{display:inline-block;padding:0 6px;border-radius:3px;font-size:12px;font-weight:700;color:#fff}
.sev.error{background:var(--err)}.sev.warning{background:#e67700}.sev.info{background:#1c7ed6}
.ev{display:inline-block;padding:0 6px;border-radius:3px;font-size:12px;border:1px solid}
.ev.confirmed{color:var(--err);border-color:var(--err)}.ev.refuted{color:var(--ok);border-color:var(--ok)}
.ev.untested,.ev.not-reached{color:var(--muted);border-color:var(--line)}
.rule{font-weight:700}.cat{color:var(--muted)}
.muted{color:var(--muted)}.warnline{color:var(--warn)}
a{color:var(--accent)}
.src{border-collapse:collapse;width:100%;font:12.5px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
.src td{padding:0 6px;white-space:pre;vertical-align:top}
.src td.mk,.src td.tm{padding:0 2px}
.src td.ln{color:var(--muted);text-align:right;user-select:none;width:1%}
.src td.tm{color:#a61e4d;text-align:right;width:1%;font-size:11.5px}
.src td.mk{width:1%}
.src tr.hit{background:#fff5f5}.src tr.timed{background:#fff4e6}
.src tr:target{background:#ffe066!important;outline:2px solid #f59f00}
.src td.code{white-space:pre-wrap;word-break:break-all}
.file{margin:10px 0 2px;font-weight:600;word-break:break-all}
.gap td{color:var(--muted)}
.graph-box{border:1px solid var(--line);border-radius:6px;overflow:auto;max-height:80vh;background:#fff;position:relative}
.graph-box.js{height:72vh;overflow:hidden;cursor:grab}
.graph-box.js svg{width:100%;height:100%}
.graph-tools{margin:4px 0}
.graph-tools button{font-size:12px;margin-right:4px}
.heat{display:inline-flex;vertical-align:middle;margin:0 6px}
.heat i{display:inline-block;width:18px;height:12px;border:1px solid #ced4da}
.tabs>nav{display:flex;flex-wrap:wrap;gap:4px;border-bottom:2px solid var(--line);margin-top:12px}
.tabs>nav a{padding:6px 14px;border:1px solid var(--line);border-bottom:none;border-radius:6px 6px 0 0;
text-decoration:none;background:var(--bg);color:var(--fg)}
.tabs>nav a.on{background:#fff;font-weight:700;border-color:var(--accent)}
.tabs>.panel{display:none;padding-top:4px}
.tabs>.panel:target,.tabs>.panel:has(:target){display:block}
.tabs:not(:has(:target))>.panel:first-of-type{display:block}
.bar{display:inline-block;height:10px;background:#fa5252;vertical-align:middle;border-radius:2px}
svg.chart text{font:11px Helvetica,Arial,sans-serif;fill:#343a40}
"""

# Pan (drag) and zoom (wheel, buttons) of a graph's SVG by its viewBox. Without JavaScript the box scrolls.
JS = """
(function(){
function setup(box){var svg=box.querySelector('svg');if(!svg)return;var vb=svg.viewBox.baseVal;
if(!vb||!vb.width)return;var all=[vb.x,vb.y,vb.width,vb.height];box.classList.add('js');
svg.removeAttribute('width');svg.removeAttribute('height');
var b=box.getBoundingClientRect();var w=Math.max(all[2],b.width),h=w*b.height/Math.max(b.width,1);
var home=(b.width>10&&h<all[3])?[all[0]-(w-all[2])/2,all[1],w,h]:all;vb.x=home[0];vb.y=home[1];vb.width=home[2];vb.height=home[3];
function zoom(f,cx,cy){var r=svg.getBoundingClientRect();var px=(cx-r.left)/r.width,py=(cy-r.top)/r.height;
var nw=vb.width*f,nh=vb.height*f;vb.x+= (vb.width-nw)*px;vb.y+=(vb.height-nh)*py;vb.width=nw;vb.height=nh;}
box.addEventListener('wheel',function(e){e.preventDefault();zoom(e.deltaY>0?1.15:1/1.15,e.clientX,e.clientY);},{passive:false});
var drag=null;box.addEventListener('mousedown',function(e){if(e.target.closest('a'))return;
drag=[e.clientX,e.clientY];box.style.cursor='grabbing';});
window.addEventListener('mouseup',function(){drag=null;box.style.cursor='';});
window.addEventListener('mousemove',function(e){if(!drag)return;var r=svg.getBoundingClientRect();
var s=Math.max(vb.width/r.width,vb.height/r.height);vb.x-=(e.clientX-drag[0])*s;vb.y-=(e.clientY-drag[1])*s;
drag=[e.clientX,e.clientY];});
var tools=box.previousElementSibling;if(tools&&tools.classList.contains('graph-tools')){tools.hidden=false;
tools.querySelectorAll('button').forEach(function(b){b.addEventListener('click',function(){var r=svg.getBoundingClientRect();
if(b.dataset.z==='0'){vb.x=all[0];vb.y=all[1];vb.width=all[2];vb.height=all[3];}
else zoom(parseFloat(b.dataset.z),r.left+r.width/2,r.top+r.height/2);});});}}
document.querySelectorAll('.graph-box').forEach(setup);
function tabs(){document.querySelectorAll('.tabs').forEach(function(t){var links=t.querySelectorAll(':scope>nav a');
var shown=null;t.querySelectorAll(':scope>.panel').forEach(function(p){if(getComputedStyle(p).display!=='none'&&!shown)shown=p.id;});
links.forEach(function(a){a.classList.toggle('on',a.getAttribute('href')==='#'+shown);});});}
window.addEventListener('hashchange',tabs);tabs();
})();
"""


def esc(value: object) -> str:
    """Text as HTML: every user-derived string (paths, source lines, kernel names, messages) goes through here."""
    return _escape(str(value), quote=True)


def page(title: str, header: str, body: str) -> str:
    """The whole document: `header` and `body` are HTML already escaped by their makers."""
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{esc(title)}</title><style>{CSS}</style></head>\n<body>"
            f'<header class="top">{header}</header>\n<main>{body}</main>\n<script>{JS}</script></body></html>\n')


def top_header(title: str, subtitle: str = "") -> str:
    return f"<h1>{esc(title)}</h1>" + (f'<div class="env">{esc(subtitle)}</div>' if subtitle else "")


def verdict(text: str, kind: str) -> str:
    """The one-line verdict; kind: ok, bad or cpu."""
    return f'<div class="verdict {kind}" id="verdict">{esc(text)}</div>'


def section(title: str, body: str, sid: str, count: str = "", open_: bool = True) -> str:
    """A collapsible section (<details>: opens and closes without JavaScript)."""
    extra = f'<span class="count">{esc(count)}</span>' if count else ""
    return (f'<details class="sec" id="{esc(sid)}"{" open" if open_ else ""}><summary>{esc(title)}{extra}</summary>'
            f'<div class="body">{body}</div></details>')


def tabs(items: Sequence[tuple[str, str, str]]) -> str:
    """Tabs without JavaScript (CSS :target; the first shows until another is picked): (id, label, html)."""
    nav = "".join(f'<a href="#{esc(i)}">{esc(label)}</a>' for i, label, _ in items)
    panels = "".join(f'<section class="panel" id="{esc(i)}">{body}</section>' for i, _, body in items)
    return f'<div class="tabs"><nav>{nav}</nav>{panels}</div>'


def table(headers: Sequence[str], rows: Iterable[Sequence[str]], numeric: Iterable[int] = (), cls: str = "t") -> str:
    """A table; `rows` hold HTML (escape text with esc first); columns in `numeric` align right."""
    num = set(numeric)
    head = "".join(f'<th{" class=n" if k in num else ""}>{esc(h)}</th>' for k, h in enumerate(headers))
    body = "".join("<tr>" + "".join(f'<td{" class=n" if k in num else ""}>{c}</td>' for k, c in enumerate(r)) + "</tr>"
                   for r in rows)
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def cards(items: Iterable[tuple[str, str]]) -> str:
    """Big numbers with a caption: (value, caption), both plain text."""
    return '<div class="cards">' + "".join(f'<div class="card"><b>{esc(v)}</b><span>{esc(c)}</span></div>'
                                           for v, c in items) + "</div>"


def para(text: str, cls: str = "") -> str:
    attr = f' class="{esc(cls)}"' if cls else ""
    return f"<p{attr}>{esc(text)}</p>"

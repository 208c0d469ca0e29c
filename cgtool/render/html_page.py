"""The frame every HTML report shares: escaping, the stylesheet, the pan-and-zoom script, sections, tabs, tables.
The styles apply inside `.cgtool` only, so a page shown inside another (a notebook's output) leaves the host as it is.

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
.cgtool{--fg:#212529;--muted:#6c757d;--line:#dee2e6;--bg:#f8f9fa;--err:#c92a2a;--warn:#b35c00;--info:#1864ab;
--ok:#2b8a3e;--code:#f1f3f5;--accent:#1c7ed6}
.cgtool,.cgtool *{box-sizing:border-box}
.cgtool{font:14px/1.45 -apple-system,"Segoe UI",Helvetica,Arial,sans-serif;color:var(--fg);background:#fff}
.cgtool header.top{background:#212529;color:#f8f9fa;padding:14px 24px}
.cgtool header.top h1{font-size:18px;margin:0 0 4px 0;font-weight:600;word-break:break-all}
.cgtool header.top .env{color:#adb5bd;font-size:12px}
.cgtool main{padding:12px 24px 40px;max-width:1500px}
.cgtool .verdict{margin:12px 0;padding:10px 14px;border-radius:6px;font-weight:600;border-left:6px solid}
.cgtool .verdict.ok{background:#ebfbee;border-color:var(--ok);color:#1b5e20}
.cgtool .verdict.bad{background:#fff5f5;border-color:var(--err);color:#8b1a1a}
.cgtool .verdict.cpu{background:#fff9db;border-color:#f59f00;color:#6b4a00}
.cgtool .cards{display:flex;flex-wrap:wrap;gap:10px;margin:10px 0}
.cgtool .card{border:1px solid var(--line);border-radius:6px;padding:8px 12px;min-width:150px;background:var(--bg)}
.cgtool .card b{display:block;font-size:18px}
.cgtool .card span{color:var(--muted);font-size:12px}
.cgtool details.sec{border:1px solid var(--line);border-radius:6px;margin:12px 0;background:#fff}
.cgtool details.sec>summary{cursor:pointer;padding:8px 12px;background:var(--bg);border-radius:6px;font-weight:600;font-size:15px}
.cgtool details.sec>.body{padding:8px 14px 12px}
.cgtool .count{color:var(--muted);font-weight:400;font-size:13px;margin-left:6px}
.cgtool table.t{border-collapse:collapse;margin:6px 0;font-size:13px}
.cgtool table.t th,.cgtool table.t td{border-bottom:1px solid var(--line);padding:3px 10px 3px 0;text-align:left;vertical-align:top}
.cgtool table.t td.n,.cgtool table.t th.n{text-align:right;font-variant-numeric:tabular-nums}
.cgtool table.t th{color:var(--muted);font-weight:600}
.cgtool code,.cgtool pre{font:12.5px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
.cgtool pre{background:var(--code);padding:6px 10px;border-radius:4px;overflow-x:auto;margin:4px 0;white-space:pre-wrap}
.cgtool .finding{border-left:4px solid var(--line);padding:6px 10px;margin:8px 0;background:#fff}
.cgtool .finding.error{border-color:var(--err)}
.cgtool .finding.warning{border-color:#f59f00}
.cgtool .finding.info{border-color:#4dabf7}
.cgtool .finding .msg{margin:2px 0}
.cgtool .finding .fix{color:#0b7285}
.cgtool .finding .lib{color:var(--muted);font-size:12px}
.cgtool .sev{display:inline-block;padding:0 6px;border-radius:3px;font-size:12px;font-weight:700;color:#fff}
.cgtool .sev.error{background:var(--err)}
.cgtool .sev.warning{background:#e67700}
.cgtool .sev.info{background:#1c7ed6}
.cgtool .ev{display:inline-block;padding:0 6px;border-radius:3px;font-size:12px;border:1px solid}
.cgtool .ev.confirmed{color:var(--err);border-color:var(--err)}
.cgtool .ev.refuted{color:var(--ok);border-color:var(--ok)}
.cgtool .ev.untested,.cgtool .ev.not-reached{color:var(--muted);border-color:var(--line)}
.cgtool .rule{font-weight:700}
.cgtool .cat{color:var(--muted)}
.cgtool .muted{color:var(--muted)}
.cgtool .warnline{color:var(--warn)}
.cgtool a{color:var(--accent)}
.cgtool .src{border-collapse:collapse;width:100%;font:12.5px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
.cgtool .src td{padding:0 6px;white-space:pre;vertical-align:top}
.cgtool .src td.mk,.cgtool .src td.tm{padding:0 2px}
.cgtool .src td.ln{color:var(--muted);text-align:right;user-select:none;width:1%}
.cgtool .src td.tm{color:#a61e4d;text-align:right;width:1%;font-size:11.5px}
.cgtool .src td.mk{width:1%}
.cgtool .src tr.hit{background:#fff5f5}
.cgtool .src tr.timed{background:#fff4e6}
.cgtool .src tr:target{background:#ffe066!important;outline:2px solid #f59f00}
.cgtool .src td.code{white-space:pre-wrap;word-break:break-all}
.cgtool .file{margin:10px 0 2px;font-weight:600;word-break:break-all}
.cgtool .gap td{color:var(--muted)}
.cgtool .graph-box{border:1px solid var(--line);border-radius:6px;overflow:auto;max-height:80vh;background:#fff;position:relative}
.cgtool .graph-box.js{height:72vh;overflow:hidden;cursor:grab}
.cgtool .graph-box.js svg{width:100%;height:100%}
.cgtool .graph-tools{margin:4px 0}
.cgtool .graph-tools button{font-size:12px;margin-right:4px}
.cgtool .heat{display:inline-flex;vertical-align:middle;margin:0 6px}
.cgtool .heat i{display:inline-block;width:18px;height:12px;border:1px solid #ced4da}
.cgtool .tabs>nav{display:flex;flex-wrap:wrap;gap:4px;border-bottom:2px solid var(--line);margin-top:12px}
.cgtool .tabs>nav a{padding:6px 14px;border:1px solid var(--line);border-bottom:none;border-radius:6px 6px 0 0;
text-decoration:none;background:var(--bg);color:var(--fg)}
.cgtool .tabs>nav a.on{background:#fff;font-weight:700;border-color:var(--accent)}
.cgtool .tabs>.panel{display:none;padding-top:4px}
.cgtool .tabs>.panel:target,.cgtool .tabs>.panel:has(:target){display:block}
.cgtool .tabs:not(:has(:target))>.panel:first-of-type{display:block}
.cgtool .bar{display:inline-block;height:10px;background:#fa5252;vertical-align:middle;border-radius:2px}
.cgtool svg.chart text{font:11px Helvetica,Arial,sans-serif;fill:#343a40}
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
            f"<title>{esc(title)}</title><style>{CSS}</style></head>\n<body style=\"margin:0\">"
            f'<div class="cgtool"><header class="top">{header}</header>\n<main>{body}</main></div>\n'
            f"<script>{JS}</script></body></html>\n")


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

// vram4j viz: draws the active memory timeline, the headline figures and the allocator state of one device.
// The data is the JSON in <script id="data"> written by io.vram4j.memory.viz.TimelinePage.
(function () {
  'use strict';
  const T0 = performance.now();
  const errors = [];
  window.addEventListener('error', (e) => errors.push(String(e.message || e)));
  window.addEventListener('unhandledrejection', (e) => errors.push(String(e.reason)));

  const OP_SEGMENT = 0, OP_SEGMENT_FREE = 1, OP_ALLOC = 2, OP_FREE = 3, OP_PENDING = 4, OP_MAP = 5, OP_UNMAP = 6;
  const MARGIN = {left: 70, right: 16, top: 12, bottom: 34};

  // ---------- formatting ----------
  function fmtBytes(b) {
    const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let v = Math.abs(b), u = 0;
    while (v >= 1024 && u < units.length - 1) { v /= 1024; u++; }
    const digits = u === 0 ? 0 : v >= 100 ? 1 : v >= 10 ? 2 : 3;
    return (b < 0 ? '-' : '') + v.toFixed(digits) + ' ' + units[u];
  }
  function fmtInt(n) { return n.toLocaleString('en-US'); }
  function count(n, word) { return fmtInt(n) + ' ' + word + (n === 1 ? '' : 's'); }
  function hex(a) { return '0x' + a.toString(16); }
  function esc(s) {
    return String(s).replace(/[&<>"]/g, (c) => ({'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;'}[c]));
  }
  function fmtTime(us) {
    if (us < 1000) return us.toFixed(0) + ' µs';
    if (us < 1e6) return (us / 1000).toFixed(us < 1e4 ? 2 : 1) + ' ms';
    return (us / 1e6).toFixed(us < 1e7 ? 3 : 2) + ' s';
  }

  // ---------- colours: one hue per allocation site (golden-angle spacing) ----------
  const colourCache = new Map();
  function siteColour(site) {
    if (site < 0) return '#a58d7f';
    let c = colourCache.get(site);
    if (!c) {
      const hue = (site * 137.508 + 200) % 360;
      const light = 52 + (site % 3) * 7;
      c = 'hsl(' + hue.toFixed(1) + ',62%,' + light + '%)';
      colourCache.set(site, c);
    }
    return c;
  }
  const SUMMARY_COLOUR = '#c9ced8';

  // ---------- data ----------
  const tParse = performance.now();
  const D = JSON.parse(document.getElementById('data').textContent);
  // the long per-step series and the ops come packed (TimelinePage.packedArray): base64 of zigzag LEB128 varints
  // of the difference to the value `stride` places before; numbers stay exact up to 2^53, as in JSON
  function unpack(x) {
    if (x === null || Array.isArray(x)) return x;
    if (x.packed !== 'zigzag-delta-leb128') throw new Error('unknown packing ' + x.packed);
    const bin = Uint8Array.fromBase64 ? Uint8Array.fromBase64(x.data) // where the browser has it
      : Uint8Array.from(atob(x.data), c => c.charCodeAt(0));
    const n = x.length, stride = x.stride, out = new Float64Array(n);
    let p = 0;
    for (let i = 0; i < n; i++) {
      let b = bin[p++], v = b & 127;
      if (b & 128) {
        let mul = 128;
        do { b = bin[p++]; v += (b & 127) * mul; mul *= 128; } while (b & 128);
      }
      const d = v % 2 === 0 ? v / 2 : -(v + 1) / 2;
      out[i] = i >= stride ? out[i - stride] + d : d;
    }
    if (p !== bin.length) throw new Error('packed array: ' + (bin.length - p) + ' bytes left over');
    return out;
  }
  for (const k of ['step_entry', 'step_time_us', 'total', 'summary', 'allocated', 'reserved', 'ops']) D[k] = unpack(D[k]);
  const parseMs = performance.now() - tParse;
  const B = D.bands;
  const nBands = B.size.length;
  const steps = D.steps;
  function stackSite(stack) { return stack < 0 ? -1 : D.stack_site[stack]; }
  function bandSite(i) { return stackSite(B.stack[i]); }

  // bytes per site (band area) for the legend
  function siteTotals() {
    const totals = new Map();
    for (let i = 0; i < nBands; i++) {
      const s = bandSite(i);
      totals.set(s, (totals.get(s) || 0) + B.size[i] * (B.end[i] - B.start[i]));
    }
    return [...totals.entries()].sort((a, b) => b[1] - a[1]);
  }

  function offsetAt(i, step) {
    let lo = B.vstart[i], hi = B.vstart[i + 1] - 1;
    while (lo < hi) { // last vertex with vsteps <= step
      const mid = (lo + hi + 1) >> 1;
      if (B.vsteps[mid] <= step) lo = mid; else hi = mid - 1;
    }
    return B.voffs[lo];
  }

  // ---------- allocator state at a moment: replay of the ops up to an entry ----------
  function stateAfterEntry(entry) {
    const segs = new Map(); // addr -> {addr, size, small, exp, blocks: Map addr -> block}
    let sorted = null;
    function segList() {
      if (!sorted) sorted = [...segs.values()].sort((a, b) => a.addr - b.addr);
      return sorted;
    }
    function segOf(addr) {
      const list = segList();
      let lo = 0, hi = list.length - 1, found = null;
      while (lo <= hi) {
        const mid = (lo + hi) >> 1;
        if (list[mid].addr <= addr) { found = list[mid]; lo = mid + 1; } else hi = mid - 1;
      }
      return found && addr < found.addr + found.size ? found : null;
    }
    function addSeg(addr, size, flags) {
      segs.set(addr, {addr, size, small: (flags & 1) !== 0, exp: (flags & 2) !== 0, blocks: new Map()});
      sorted = null;
    }
    const ops = D.ops;
    for (let i = 0; i < ops.length; i += 6) {
      if (ops[i] > entry) break;
      const code = ops[i + 1], addr = ops[i + 2], size = ops[i + 3], aux = ops[i + 4], stack = ops[i + 5];
      if (code === OP_SEGMENT) {
        addSeg(addr, size, aux);
      } else if (code === OP_SEGMENT_FREE) {
        segs.delete(addr); sorted = null;
      } else if (code === OP_ALLOC) {
        const s = segOf(addr);
        if (s) s.blocks.set(addr, {addr, size, req: aux, stack, pending: false});
      } else if (code === OP_FREE) {
        const s = segOf(addr);
        if (s) s.blocks.delete(addr);
      } else if (code === OP_PENDING) {
        const s = segOf(addr);
        const b = s && s.blocks.get(addr);
        if (b) b.pending = true;
      } else if (code === OP_MAP) {
        // contiguous mapped pages form one segment (as StateTracker.segmentMap)
        let s = null;
        for (const x of segs.values()) {
          if (x.addr + x.size === addr) { x.size += size; s = x; break; }
        }
        if (!s) { addSeg(addr, size, aux); s = segs.get(addr); }
        const after = segs.get(s.addr + s.size);
        if (after) {
          segs.delete(after.addr);
          s.size += after.size;
          for (const [a, b] of after.blocks) s.blocks.set(a, b);
        }
        sorted = null;
      } else if (code === OP_UNMAP) {
        const s = segOf(addr);
        if (!s) continue;
        segs.delete(s.addr);
        const end = addr + size, sEnd = s.addr + s.size;
        if (addr > s.addr) addSeg(s.addr, addr - s.addr, (s.small ? 1 : 0) | 2);
        if (end < sEnd) addSeg(end, sEnd - end, (s.small ? 1 : 0) | 2);
        for (const b of s.blocks.values()) {
          const t = segOf(b.addr);
          if (t) t.blocks.set(b.addr, b);
        }
        sorted = null;
      }
    }
    // figures, with the free blocks as the gaps between active ones
    let reserved = 0, allocated = 0, active = 0, free = 0, largestFree = 0, freeBlocks = 0, blocks = 0;
    const list = segList();
    for (const s of list) {
      reserved += s.size;
      const bl = [...s.blocks.values()].sort((a, b) => a.addr - b.addr);
      s.sortedBlocks = bl;
      let at = s.addr;
      for (const b of bl) {
        if (b.addr > at) { const g = b.addr - at; free += g; freeBlocks++; largestFree = Math.max(largestFree, g); }
        active += b.size;
        if (!b.pending) allocated += b.size;
        at = b.addr + b.size;
        blocks++;
      }
      if (s.addr + s.size > at) { const g = s.addr + s.size - at; free += g; freeBlocks++; largestFree = Math.max(largestFree, g); }
    }
    return {entry, segments: list, reserved, allocated, active, free, largestFree, freeBlocks, blocks: blocks + freeBlocks};
  }

  // ---------- headline ----------
  const H = D.headline;
  function card(label, value, note, bad) {
    return '<div class="card' + (bad ? ' bad' : '') + '" data-figure="' + esc(label) + '"><div class="label">' + esc(label)
      + '</div><div class="value">' + esc(value) + '</div><div class="note">' + note + '</div></div>';
  }
  // a snapshot without a trace (segments only): a page about its state at the dump, no peaks and no time axis
  const stateOnly = H.entries === 0;
  function renderStateCards() {
    const pct = H.reserved_at_peak > 0 ? (100 * H.fragmentation_at_peak / H.reserved_at_peak).toFixed(1) : '0.0';
    document.getElementById('cards').innerHTML =
      card('Reserved', fmtBytes(H.reserved_at_peak), fmtInt(H.reserved_at_peak) + ' B in ' + count(H.segments_at_end, 'segment')) +
      card('Allocated', fmtBytes(H.peak_allocated), fmtInt(H.peak_allocated) + ' B in blocks') +
      card('Reserved but unallocated', fmtBytes(H.fragmentation_at_peak), pct + '% of reserved, in '
        + count(H.free_blocks_at_peak, 'free block') + '; the largest ' + fmtBytes(H.largest_free_at_peak));
    document.getElementById('subtitle').textContent = 'device ' + D.device + ' · no trace recorded: the allocator state at the dump · '
      + count(H.segments_at_end, 'segment');
  }
  function renderCards() {
    if (stateOnly) { renderStateCards(); return; }
    const fragPct = H.reserved_at_peak > 0 ? (100 * H.fragmentation_at_peak / H.reserved_at_peak).toFixed(1) : '0.0';
    document.getElementById('cards').innerHTML =
      card('Peak allocated', fmtBytes(H.peak_allocated), fmtInt(H.peak_allocated) + ' B in blocks') +
      card('Peak reserved', fmtBytes(H.peak_reserved), fmtInt(H.peak_reserved) + ' B in segments') +
      card('Fragmentation at peak', fmtBytes(H.fragmentation_at_peak), fragPct + '% of reserved unallocated, in '
        + count(H.free_blocks_at_peak, 'free block') + '; the largest ' + fmtBytes(H.largest_free_at_peak)) +
      card('Peak requested', fmtBytes(H.peak_requested), 'top of the timeline') +
      card('OOMs', fmtInt(H.ooms), H.ooms ? 'out-of-memory entries in the trace' : 'no out-of-memory entry', H.ooms > 0);
    const parts = ['device ' + D.device, count(H.entries, 'trace entry').replace('entrys', 'entries'), count(H.allocs, 'allocation'),
      fmtInt(nBands) + ' drawn one by one' + (nBands < H.allocs ? ' (the ' + fmtInt(D.max_entries) + ' largest; the rest summed in grey)' : ''),
      count(H.segments_at_end, 'segment') + ' at the end'];
    if (D.inconsistencies > 0) parts.push('⚠ ' + fmtInt(D.inconsistencies) + ' entries did not fit the state (first: ' + D.first_inconsistency + ')');
    document.getElementById('subtitle').textContent = parts.join(' · ');
  }

  // ---------- the timeline canvas ----------
  const canvas = document.getElementById('timeline');
  const ctx = canvas.getContext('2d');
  const view = {x0: 0, x1: steps + 1};
  let selectedStep = -1, hoverStep = -1;
  let pinned = null; // {kind: 'band', i} | {kind: 'block', ...}
  let bandsDrawn = 0;
  const drawParts = {};
  const dpr = window.devicePixelRatio || 1;
  let W = 0, Hh = 0;

  function resize(c, minHeight = 100) {
    const r = c.getBoundingClientRect();
    const w = Math.max(300, Math.round(r.width)), h = Math.max(minHeight, Math.round(r.height));
    if (c.width !== Math.round(w * dpr) || c.height !== Math.round(h * dpr)) {
      c.width = Math.round(w * dpr); c.height = Math.round(h * dpr);
    }
    return [w, h];
  }
  function plotW() { return W - MARGIN.left - MARGIN.right; }
  function plotH() { return Hh - MARGIN.top - MARGIN.bottom; }
  function xOf(step) { return MARGIN.left + (step - view.x0) / (view.x1 - view.x0) * plotW(); }
  function stepOf(x) { return view.x0 + (x - MARGIN.left) / plotW() * (view.x1 - view.x0); }
  let yMax = 1;
  function yOf(bytes) { return MARGIN.top + plotH() * (1 - bytes / yMax); }
  function bytesOf(y) { return (1 - (y - MARGIN.top) / plotH()) * yMax; }
  const showReserved = document.getElementById('show-reserved');
  const showAllocated = document.getElementById('show-allocated');

  function visibleMax() {
    const a = Math.max(0, Math.floor(view.x0)), b = Math.min(steps, Math.ceil(view.x1));
    let m = 1;
    for (let s = a; s <= b; s++) {
      m = Math.max(m, D.total[s]);
      if (showReserved.checked) m = Math.max(m, D.reserved[s]);
      if (showAllocated.checked) m = Math.max(m, D.allocated[s]);
    }
    return m;
  }
  function niceStep(range, target) {
    const raw = range / target, p = Math.pow(2, Math.floor(Math.log2(raw)));
    for (const m of [1, 2, 4, 8]) if (p * m >= raw) return p * m;
    return p * 8;
  }
  function niceDecimal(range, target) {
    const raw = range / target, p = Math.pow(10, Math.floor(Math.log10(raw)));
    for (const m of [1, 2, 5, 10]) if (p * m >= raw) return p * m;
    return p * 10;
  }

  // Per pixel column: the envelope of what is alive, and the reserved / allocated lines (level of detail: the
  // columns summarize every step they cover, so 100,000 steps cost one pass).
  function columns() {
    const w = Math.ceil(plotW());
    const top = new Float64Array(w).fill(-1), sumBottom = new Float64Array(w), res = new Float64Array(w), alc = new Float64Array(w);
    const a = Math.max(0, Math.floor(view.x0)), b = Math.min(steps, Math.ceil(view.x1));
    const k = plotW() / (view.x1 - view.x0), x0 = view.x0;
    for (let s = a; s <= b; s++) {
      const c0 = Math.max(0, Math.floor((s - x0) * k)), c1 = Math.min(w - 1, Math.max(c0, Math.ceil((s + 1 - x0) * k) - 1));
      for (let c = c0; c <= c1; c++) {
        if (top[c] < 0) { top[c] = D.total[s]; sumBottom[c] = D.total[s] - D.summary[s]; res[c] = D.reserved[s]; alc[c] = D.allocated[s]; }
        else {
          top[c] = Math.max(top[c], D.total[s]);
          sumBottom[c] = Math.min(sumBottom[c], D.total[s] - D.summary[s]);
          res[c] = Math.max(res[c], D.reserved[s]);
          alc[c] = Math.max(alc[c], D.allocated[s]);
        }
      }
    }
    return {w, top, sumBottom, res, alc};
  }

  function drawTimeline() {
    [W, Hh] = resize(canvas);
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.fillStyle = '#ffffff';
    ctx.fillRect(0, 0, W, Hh);
    yMax = visibleMax() * 1.06;
    const pw = plotW(), ph = plotH();
    // grid and y axis
    ctx.font = '11px system-ui, sans-serif';
    ctx.textBaseline = 'middle';
    ctx.textAlign = 'right';
    const yStep = niceStep(yMax, 6);
    ctx.strokeStyle = '#eef0f3';
    ctx.fillStyle = '#687083';
    ctx.lineWidth = 1;
    for (let v = 0; v <= yMax; v += yStep) {
      const y = Math.round(yOf(v)) + 0.5;
      ctx.beginPath(); ctx.moveTo(MARGIN.left, y); ctx.lineTo(MARGIN.left + pw, y); ctx.stroke();
      ctx.fillText(fmtBytes(v), MARGIN.left - 6, y);
    }
    ctx.save();
    ctx.beginPath(); ctx.rect(MARGIN.left, MARGIN.top, pw, ph); ctx.clip();

    // level of detail: everything alive, in the summary colour; bands big enough to see go on top
    const tp0 = performance.now();
    const col = columns();
    drawParts.columns = performance.now() - tp0;
    ctx.fillStyle = SUMMARY_COLOUR;
    for (let c = 0; c < col.w; c++) {
      if (col.top[c] <= 0) continue;
      const yt = yOf(col.top[c]);
      ctx.fillRect(MARGIN.left + c, yt, 1, yOf(0) - yt);
    }
    const pxPerStep = pw / (view.x1 - view.x0);
    const bytesPerPx = yMax / ph;
    bandsDrawn = 0;
    // while the wheel or a drag is moving the view, only bands at least a pixel high and covering a dozen pixels
    // are drawn; the full drawing follows when the movement pauses
    const minArea = interacting ? 12 : 0.5;
    const tp1 = performance.now();
    drawParts.envelope = tp1 - tp0 - drawParts.columns;
    let lastColour = null;
    for (let i = 0; i < nBands; i++) {
      const start = B.start[i], end = B.end[i];
      if (end <= view.x0 || start >= view.x1) continue;
      const size = B.size[i];
      // level of detail: a band covering less than half a pixel melts into the grey envelope; thinner bands that
      // cover more are drawn a pixel high, so the site colours of many small allocations still show
      const w = (Math.min(end, view.x1) - Math.max(start, view.x0)) * pxPerStep;
      if (w * size / bytesPerPx < minArea || (interacting && size < bytesPerPx)) continue;
      const colour = siteColour(bandSite(i));
      if (colour !== lastColour) { ctx.fillStyle = colour; lastColour = colour; }
      drawBand(B.vstart[i], B.vstart[i + 1], start, end, size);
      bandsDrawn++;
    }
    drawParts.bands = performance.now() - tp1;
    // the summary band proper, hatched darker where it is thick enough to see
    ctx.fillStyle = 'rgba(120,128,142,0.28)';
    for (let c = 0; c < col.w; c++) {
      if (col.top[c] <= col.sumBottom[c]) continue;
      const yt = yOf(col.top[c]), yb = yOf(col.sumBottom[c]);
      if (yb - yt >= 1) ctx.fillRect(MARGIN.left + c, yt, 1, yb - yt);
    }
    // reserved and allocated lines
    function line(arr, colour, dash) {
      ctx.strokeStyle = colour; ctx.lineWidth = 1.5; ctx.setLineDash(dash);
      ctx.beginPath();
      let started = false;
      for (let c = 0; c < col.w; c++) {
        if (col.top[c] < 0) continue;
        const y = yOf(arr[c]);
        if (!started) { ctx.moveTo(MARGIN.left + c, y); started = true; } else ctx.lineTo(MARGIN.left + c + 1, y);
      }
      ctx.stroke(); ctx.setLineDash([]);
    }
    if (showReserved.checked) line(col.res, '#c2410c', []); // solid: a dashed stroke costs more than all the bands
    if (showAllocated.checked) line(col.alc, 'rgba(30,58,138,0.8)', []);
    // OOMs
    for (const o of D.ooms) {
      const x = Math.round(xOf(o[1] + 0.5)) + 0.5;
      ctx.strokeStyle = '#dc2626'; ctx.lineWidth = 2;
      ctx.beginPath(); ctx.moveTo(x, MARGIN.top); ctx.lineTo(x, MARGIN.top + ph); ctx.stroke();
      ctx.fillStyle = '#dc2626'; ctx.textAlign = 'left'; ctx.fillText('OOM', x + 4, MARGIN.top + 10);
    }
    // selection and hover
    function marker(step, colour, width) {
      const x = Math.round(xOf(step + 0.5)) + 0.5;
      ctx.strokeStyle = colour; ctx.lineWidth = width;
      ctx.beginPath(); ctx.moveTo(x, MARGIN.top); ctx.lineTo(x, MARGIN.top + ph); ctx.stroke();
    }
    if (selectedStep >= 0) marker(selectedStep, '#111827', 1.5);
    ctx.restore();

    // x axis
    ctx.strokeStyle = '#c9ced8'; ctx.lineWidth = 1;
    ctx.beginPath(); ctx.moveTo(MARGIN.left, MARGIN.top + ph + 0.5); ctx.lineTo(MARGIN.left + pw, MARGIN.top + ph + 0.5); ctx.stroke();
    ctx.fillStyle = '#687083'; ctx.textAlign = 'center'; ctx.textBaseline = 'top';
    const xStep = Math.max(1, niceDecimal(view.x1 - view.x0, Math.max(2, Math.floor(pw / 110))));
    for (let s = Math.ceil(view.x0 / xStep) * xStep; s <= view.x1; s += xStep) {
      const x = xOf(s);
      let label = fmtInt(s);
      if (D.step_time_us && s <= steps && D.step_time_us[s] >= 0) label += '  (' + fmtTime(D.step_time_us[s]) + ')';
      ctx.fillText(label, x, MARGIN.top + ph + 6);
    }
    ctx.textAlign = 'left';
    ctx.fillText('step (alloc / free)', MARGIN.left, MARGIN.top + ph + 20);
    ctx.textAlign = 'right';
    ctx.fillText('bands drawn: ' + fmtInt(bandsDrawn) + ' of ' + fmtInt(nBands), MARGIN.left + pw, MARGIN.top + ph + 20);
  }

  function drawBand(v0, v1, start, end, size) {
    const inset = yOf(0) - yOf(size) > 4 ? 0.5 : 0; // a hairline between tall neighbours of the same site
    if (v1 - v0 === 1) { // the band never moves: a rectangle on whole pixels, the common case and the cheapest
      const xa = Math.round(xOf(Math.max(start, view.x0 - 1))), xb = Math.max(xa + 1, Math.round(xOf(Math.min(end, view.x1 + 1))));
      const yt = Math.round(yOf(B.voffs[v0] + size)), yb = Math.max(yt + 1, Math.round(yOf(B.voffs[v0]) - inset));
      ctx.fillRect(xa, yt, xb - xa, yb - yt);
      return;
    }
    // first vertex at or before the view's left edge, stop after the right edge
    let lo = v0, hi = v1 - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (B.vsteps[mid] <= view.x0) lo = mid; else hi = mid - 1;
    }
    ctx.beginPath();
    const top = [], bottom = [];
    for (let k = lo; k < v1; k++) {
      const s0 = Math.max(B.vsteps[k], view.x0 - 1);
      const s1 = Math.min(k + 1 < v1 ? B.vsteps[k + 1] : end, view.x1 + 1);
      if (s0 > view.x1 + 1) break;
      const xa = xOf(s0), xb = xOf(s1);
      const n = top.length;
      if (n > 0 && xb - top[n - 4] < 1) { // steps within one pixel column: extend the last piece instead
        top[n - 2] = xb; bottom[n - 2] = xb;
        continue;
      }
      top.push(xa, yOf(B.voffs[k] + size), xb, yOf(B.voffs[k] + size));
      bottom.push(xa, yOf(B.voffs[k]) - inset, xb, yOf(B.voffs[k]) - inset);
    }
    if (top.length === 0) return;
    ctx.moveTo(top[0], top[1]);
    for (let k = 2; k < top.length; k += 2) ctx.lineTo(top[k], top[k + 1]);
    for (let k = bottom.length - 2; k >= 0; k -= 2) ctx.lineTo(bottom[k], bottom[k + 1]);
    ctx.closePath();
    ctx.fill();
  }

  // hit test: the band (or the summary band) under a point
  function hit(mx, my) {
    const step = Math.floor(stepOf(mx));
    if (step < 0 || step > steps) return null;
    const bytes = bytesOf(my);
    if (bytes < 0 || bytes > D.total[step]) return {kind: 'none', step};
    for (let i = 0; i < nBands; i++) {
      if (B.start[i] > step || B.end[i] <= step) continue;
      const off = offsetAt(i, step);
      if (bytes >= off && bytes < off + B.size[i]) return {kind: 'band', i, step};
    }
    if (bytes >= D.total[step] - D.summary[step]) return {kind: 'summary', step};
    return {kind: 'none', step};
  }

  function stepLabel(step) {
    let s = 'step ' + fmtInt(step);
    const e = D.step_entry[step];
    s += e >= 0 ? ' · entry ' + fmtInt(e) : ' · before the trace';
    if (D.step_time_us && D.step_time_us[step] >= 0) s += ' · +' + fmtTime(D.step_time_us[step]);
    return s;
  }

  // C++ and PyTorch-internal frames (flag 3 of a frame) are hidden unless the toggle is on, as memory_viz filters them
  const showInternal = document.getElementById('show-internal');
  function framesHtml(stack, limit) {
    if (stack < 0) return '<div class="muted">no stack recorded (allocated before the trace, or recorded without frames)</div>';
    const ids = D.stacks[stack];
    const site = D.sites[D.stack_site[stack]];
    const all = showInternal.checked;
    let html = '<ul class="frames">', shown = 0, more = 0, hidden = 0;
    for (let k = 0; k < ids.length; k++) {
      const f = D.frames[ids[k]];
      if (!all && f[3]) { hidden++; continue; }
      if (shown >= limit) { more++; continue; }
      shown++;
      const label = f[0] + ' (' + f[1].replace(/^.*[\\/]/, '') + ':' + f[2] + ')';
      html += '<li' + (label === site ? ' class="site"' : '') + '>' + esc(f[0]) + ' <span class="file">' + esc(f[1]) + ':' + f[2] + '</span></li>';
    }
    if (more) html += '<li class="muted">… ' + more + ' more frames</li>';
    if (hidden) html += '<li class="muted hidden-frames">' + hidden + ' C++ and PyTorch-internal frame' + (hidden > 1 ? 's' : '')
      + ' hidden (tick “C++ and PyTorch frames” to show them)</li>';
    return html + '</ul>';
  }

  function bandHtml(i, step, full) {
    const site = bandSite(i);
    const fate = B.end[i] > steps ? 'alive at the end' : 'freed at step ' + fmtInt(B.end[i]);
    let html = '<div class="big">' + fmtBytes(B.size[i]) + '</div>'
      + '<table><tr><td>requested</td><td>' + fmtInt(B.size[i]) + ' B</td></tr>'
      + '<tr><td>block</td><td>' + fmtBytes(B.block[i]) + '</td></tr>'
      + '<tr><td>address</td><td>' + hex(B.addr[i]) + '</td></tr>'
      + '<tr><td>lifetime</td><td>' + (B.start[i] === 0 ? 'before the trace' : 'step ' + fmtInt(B.start[i])) + ' → ' + fate + '</td></tr>'
      + (step >= 0 ? '<tr><td>offset</td><td>' + fmtBytes(offsetAt(i, step)) + ' at step ' + fmtInt(step) + '</td></tr>' : '')
      + '<tr><td>site</td><td><span class="sw" style="display:inline-block;width:10px;height:10px;border-radius:2px;background:'
      + siteColour(site) + '"></span> ' + esc(site >= 0 ? D.sites[site] : 'unknown') + '</td></tr></table>';
    return html + framesHtml(B.stack[i], full ? 200 : 8);
  }

  const tooltip = document.getElementById('tooltip');
  function showTooltip(ev, html) {
    tooltip.innerHTML = html;
    tooltip.hidden = false;
    const r = tooltip.getBoundingClientRect();
    let x = ev.clientX + 14, y = ev.clientY + 14;
    if (x + r.width > window.innerWidth - 8) x = ev.clientX - r.width - 14;
    if (y + r.height > window.innerHeight - 8) y = Math.max(8, ev.clientY - r.height - 14);
    tooltip.style.left = x + 'px';
    tooltip.style.top = y + 'px';
  }
  function hideTooltip() { tooltip.hidden = true; }

  // Zoom, pan, toggles and clicks redraw everything; hovering only copies the last full drawing back and adds
  // the hover line, so moving the mouse costs a blit whatever the number of events.
  const base = document.createElement('canvas');
  let drag = null, frame = 0, stale = true, interacting = false, settleTimer = 0;
  function moving() {
    interacting = true;
    clearTimeout(settleTimer);
    settleTimer = setTimeout(() => { interacting = false; redraw(); }, 160);
  }
  function redraw(full = true) {
    stale = stale || full;
    if (frame) return;
    frame = requestAnimationFrame(paint);
  }
  function paint() {
    frame = 0;
    if (stale || base.width !== canvas.width || base.height !== canvas.height) {
      drawTimeline();
      base.width = canvas.width; base.height = canvas.height;
      base.getContext('2d').drawImage(canvas, 0, 0);
      stale = false;
    } else {
      ctx.setTransform(1, 0, 0, 1, 0, 0);
      ctx.drawImage(base, 0, 0);
      ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    }
    if (hoverStep >= 0) {
      const x = Math.round(xOf(hoverStep + 0.5)) + 0.5;
      if (x >= MARGIN.left && x <= MARGIN.left + plotW()) {
        ctx.strokeStyle = 'rgba(17,24,39,0.35)'; ctx.lineWidth = 1;
        ctx.beginPath(); ctx.moveTo(x, MARGIN.top); ctx.lineTo(x, MARGIN.top + plotH()); ctx.stroke();
      }
    }
  }
  canvas.addEventListener('wheel', (ev) => {
    ev.preventDefault();
    const r = canvas.getBoundingClientRect();
    const at = stepOf(ev.clientX - r.left);
    const factor = Math.exp(Math.sign(ev.deltaY) * Math.min(Math.abs(ev.deltaY), 200) / 300);
    let w = (view.x1 - view.x0) * factor;
    w = Math.min(steps + 1, Math.max(4, w));
    const frac = (at - view.x0) / (view.x1 - view.x0);
    view.x0 = at - frac * w; view.x1 = view.x0 + w;
    clampView();
    moving();
    redraw();
  }, {passive: false});
  function clampView() {
    const w = view.x1 - view.x0;
    if (view.x0 < 0) { view.x0 = 0; view.x1 = w; }
    if (view.x1 > steps + 1) { view.x1 = steps + 1; view.x0 = Math.max(0, view.x1 - w); }
  }
  canvas.addEventListener('mousedown', (ev) => { drag = {x: ev.clientX, x0: view.x0, x1: view.x1, moved: false}; });
  window.addEventListener('mouseup', (ev) => {
    if (drag && !drag.moved && ev.target === canvas) {
      const r = canvas.getBoundingClientRect();
      const h = hit(ev.clientX - r.left, ev.clientY - r.top);
      if (h) {
        selectStep(h.step);
        if (h.kind === 'band') { pinned = {kind: 'band', i: h.i}; showDetail(bandHtml(h.i, h.step, true)); }
      }
    }
    drag = null;
  });
  canvas.addEventListener('mousemove', (ev) => {
    const r = canvas.getBoundingClientRect();
    const mx = ev.clientX - r.left, my = ev.clientY - r.top;
    if (drag) {
      const dx = ev.clientX - drag.x;
      if (Math.abs(dx) > 3) drag.moved = true;
      if (drag.moved) {
        const per = (drag.x1 - drag.x0) / plotW();
        view.x0 = drag.x0 - dx * per; view.x1 = drag.x1 - dx * per;
        clampView();
        moving();
        hideTooltip();
        redraw();
        return;
      }
    }
    const h = hit(mx, my);
    hoverStep = h ? h.step : -1;
    redraw(false);
    if (!h) { hideTooltip(); return; }
    let html;
    if (h.kind === 'band') {
      html = bandHtml(h.i, h.step, false);
      if (!pinned) showDetail(bandHtml(h.i, h.step, true));
    } else if (h.kind === 'summary') {
      html = '<b>' + fmtBytes(D.summary[h.step]) + '</b> in allocations smaller than the ' + fmtInt(D.max_entries)
        + ' drawn one by one (summary band)';
    } else {
      html = '';
    }
    html += '<div class="dim">' + stepLabel(h.step) + ' · alive ' + fmtBytes(D.total[h.step]) + ' requested, '
      + fmtBytes(D.allocated[h.step]) + ' allocated, ' + fmtBytes(D.reserved[h.step]) + ' reserved</div>';
    showTooltip(ev, html);
  });
  canvas.addEventListener('mouseleave', () => { hoverStep = -1; hideTooltip(); redraw(false); });
  canvas.addEventListener('keydown', (ev) => {
    const w = view.x1 - view.x0, mid = (view.x0 + view.x1) / 2;
    let handled = true;
    if (ev.key === '+' || ev.key === '=') { const n = Math.max(4, w / 1.5); view.x0 = mid - n / 2; view.x1 = mid + n / 2; }
    else if (ev.key === '-' || ev.key === '_') { const n = Math.min(steps + 1, w * 1.5); view.x0 = mid - n / 2; view.x1 = mid + n / 2; }
    else if (ev.key === 'ArrowLeft') { view.x0 -= w / 8; view.x1 -= w / 8; }
    else if (ev.key === 'ArrowRight') { view.x0 += w / 8; view.x1 += w / 8; }
    else if (ev.key === '0') { view.x0 = 0; view.x1 = steps + 1; }
    else handled = false;
    if (handled) { ev.preventDefault(); clampView(); redraw(); }
  });
  canvas.addEventListener('dblclick', () => { view.x0 = 0; view.x1 = steps + 1; redraw(); });
  document.getElementById('reset').addEventListener('click', () => { view.x0 = 0; view.x1 = steps + 1; redraw(); });
  showReserved.addEventListener('change', redraw);
  showInternal.addEventListener('change', () => {
    if (pinned && pinned.kind === 'band') showDetail(bandHtml(pinned.i, selectedStep, true));
    else if (selectedStep >= 0) showLargestAt(selectedStep);
  });
  showAllocated.addEventListener('change', redraw);
  window.addEventListener('resize', () => { redraw(); drawState(); });

  function showDetail(html) {
    const d = document.getElementById('detail');
    d.classList.remove('muted');
    d.innerHTML = html;
  }

  // the detail panel starts with the largest allocation alive at the allocated peak
  function showLargestAt(step) {
    let best = -1;
    for (let i = 0; i < nBands; i++) {
      if (B.start[i] <= step && step < B.end[i] && (best < 0 || B.size[i] > B.size[best])) best = i;
    }
    if (best >= 0) showDetail('<div class="muted">The largest allocation alive at the peak:</div>' + bandHtml(best, step, true));
  }

  function renderLegend() {
    const totals = siteTotals();
    const shown = totals.slice(0, 14);
    let html = '';
    for (const [site] of shown) {
      html += '<span><span class="sw" style="background:' + siteColour(site) + '"></span>' + esc(site >= 0 ? D.sites[site] : 'no stack (e.g. allocated before the trace)') + '</span>';
    }
    if (totals.length > shown.length) html += '<span class="muted">+ ' + (totals.length - shown.length) + ' more sites</span>';
    html += '<span><span class="sw" style="background:' + SUMMARY_COLOUR + '"></span>small allocations (merged)</span>';
    html += '<span><span class="sw" style="background:#c2410c"></span>reserved</span>';
    html += '<span><span class="sw" style="background:#1e3a8a"></span>allocated</span>';
    document.getElementById('legend').innerHTML = html;
  }

  // ---------- the state canvas ----------
  const stateCanvas = document.getElementById('state');
  const sctx = stateCanvas.getContext('2d');
  let state = null, stateRows = [];
  const ROW_LABEL = 92;

  function selectStep(step) {
    selectedStep = step;
    state = stateAfterEntry(D.step_entry[step]);
    renderState();
    redraw();
  }
  function selectEntry(entry) {
    // the step that covers an entry: the last step whose entry is at most it
    let lo = 0, hi = steps;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (D.step_entry[mid] <= entry) lo = mid; else hi = mid - 1;
    }
    selectedStep = lo;
    state = stateAfterEntry(entry);
    renderState();
  }

  function renderState() {
    const s = state;
    document.getElementById('state-when').textContent = stateOnly ? '· at the dump'
      : '· ' + stepLabel(selectedStep) + (s.entry === H.peak_allocated_entry ? ' · the allocated peak' : '');
    const frag = s.reserved - s.allocated;
    document.getElementById('state-summary').innerHTML =
      '<b>' + fmtInt(s.segments.length) + '</b> segment' + (s.segments.length === 1 ? '' : 's') + ' · reserved <b>' + fmtBytes(s.reserved) + '</b> · allocated <b>'
      + fmtBytes(s.allocated) + '</b> · reserved but unallocated <b>' + fmtBytes(frag) + '</b> in '
      + count(s.freeBlocks, 'free block') + ' · largest free block <b>' + fmtBytes(s.largestFree) + '</b>';
    drawState();
  }

  function drawState() {
    if (!state) return;
    const segs = state.segments;
    const rowH = segs.length <= 40 ? 16 : segs.length <= 150 ? 10 : 6;
    const gap = rowH >= 10 ? 3 : 1;
    const h = Math.max(40, segs.length * (rowH + gap) + 8);
    stateCanvas.style.height = h + 'px';
    const [w] = resize(stateCanvas, h);
    sctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    sctx.fillStyle = '#ffffff';
    sctx.fillRect(0, 0, w, h);
    if (segs.length === 0) {
      sctx.fillStyle = '#687083'; sctx.font = '13px system-ui, sans-serif'; sctx.textBaseline = 'middle';
      sctx.fillText('no segments at this moment', 8, 20);
      stateRows = [];
      return;
    }
    let largest = 0;
    for (const sg of segs) largest = Math.max(largest, sg.size);
    const full = w - ROW_LABEL - 8;
    const scale = full / largest;
    sctx.font = (rowH >= 10 ? 11 : 9) + 'px system-ui, sans-serif';
    sctx.textBaseline = 'middle';
    stateRows = [];
    let y = 4;
    for (const sg of segs) {
      const width = Math.max(3, sg.size * scale);
      const x0 = ROW_LABEL;
      sctx.fillStyle = '#e9ecf1';
      sctx.fillRect(x0, y, width, rowH);
      for (const b of sg.sortedBlocks) {
        const bx = x0 + (b.addr - sg.addr) * scale;
        const bw = Math.max(1, b.size * scale);
        sctx.fillStyle = siteColour(stackSite(b.stack));
        sctx.fillRect(bx, y, bw, rowH);
        if (b.pending) {
          sctx.fillStyle = 'rgba(255,255,255,0.55)';
          for (let k = -rowH; k < bw; k += 5) sctx.fillRect(bx + Math.max(0, k), y, 2, rowH);
        }
      }
      sctx.strokeStyle = '#9aa3b2'; sctx.lineWidth = 1;
      sctx.strokeRect(x0 + 0.5, y + 0.5, width - 1, rowH - 1);
      if (rowH >= 10) {
        sctx.fillStyle = '#4b5363'; sctx.textAlign = 'right';
        sctx.fillText(fmtBytes(sg.size) + (sg.small ? ' s' : '') + (sg.exp ? ' e' : ''), ROW_LABEL - 8, y + rowH / 2);
      }
      stateRows.push({y, h: rowH, seg: sg, scale});
      y += rowH + gap;
    }
  }

  stateCanvas.addEventListener('mousemove', (ev) => {
    const r = stateCanvas.getBoundingClientRect();
    const mx = ev.clientX - r.left, my = ev.clientY - r.top;
    const row = stateRows.find((rw) => my >= rw.y && my < rw.y + rw.h);
    if (!row) { hideTooltip(); return; }
    const addr = row.seg.addr + (mx - ROW_LABEL) / row.scale;
    if (addr < row.seg.addr || addr >= row.seg.addr + row.seg.size) { hideTooltip(); return; }
    const segHtml = '<div class="dim">segment ' + hex(row.seg.addr) + ' · ' + fmtBytes(row.seg.size) + ' · '
      + (row.seg.small ? 'small pool' : 'large pool') + (row.seg.exp ? ' · expandable' : '') + '</div>';
    const b = row.seg.sortedBlocks.find((x) => addr >= x.addr && addr < x.addr + x.size);
    if (b) {
      const site = stackSite(b.stack);
      const html = '<b>' + fmtBytes(b.size) + '</b> ' + (b.pending ? 'active_pending_free' : 'active_allocated') + ' at ' + hex(b.addr)
        + '<br>requested ' + fmtInt(b.req) + ' B · ' + esc(site >= 0 ? D.sites[site] : 'no stack') + segHtml;
      showTooltip(ev, html);
    } else {
      // the free block: the gap around the address
      let lo = row.seg.addr, hi = row.seg.addr + row.seg.size;
      for (const x of row.seg.sortedBlocks) {
        if (x.addr + x.size <= addr) lo = Math.max(lo, x.addr + x.size);
        if (x.addr > addr) { hi = Math.min(hi, x.addr); break; }
      }
      showTooltip(ev, '<b>' + fmtBytes(hi - lo) + '</b> inactive at ' + hex(lo) + segHtml);
    }
  });
  stateCanvas.addEventListener('mouseleave', hideTooltip);

  // ---------- first render and the self-check ----------
  function nonBlankPixels(c) {
    const g = c.getContext('2d');
    const img = g.getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 0; i < img.length; i += 16) {
      if (img[i] < 250 || img[i + 1] < 250 || img[i + 2] < 250) n++;
    }
    return n;
  }
  // how long a redraw (whole range, and zoomed to a tenth) and a hover hit test take, for the self-check
  const timings = {};
  // canvas drawing is deferred: reading a pixel makes the browser finish it, so the timings include rasterizing
  function flush() { ctx.getImageData(0, 0, 1, 1); }
  function measureInteraction() {
    flush();
    const x0 = view.x0, x1 = view.x1;
    let t = performance.now();
    drawTimeline();
    flush();
    timings.redraw_ms = performance.now() - t;
    const mid = (x0 + x1) / 2, w = (x1 - x0) / 10;
    view.x0 = mid - w / 2; view.x1 = mid + w / 2;
    t = performance.now();
    drawTimeline();
    flush();
    timings.zoomed_redraw_ms = performance.now() - t;
    view.x0 = x0; view.x1 = x1;
    interacting = true;
    t = performance.now();
    drawTimeline();
    flush();
    timings.moving_redraw_ms = performance.now() - t;
    interacting = false;
    drawTimeline();
    stale = true;
    paint();
    t = performance.now();
    for (let k = 0; k < 20; k++) {
      const h = hit(MARGIN.left + plotW() * (k + 0.5) / 20, MARGIN.top + plotH() * 0.6);
      hoverStep = h ? h.step : -1;
      paint();
      flush();
    }
    hoverStep = -1;
    paint();
    timings.hover_ms = (performance.now() - t) / 20;
  }
  function round1(x) { return Math.round(x * 10) / 10; }

  // drives the page as a user would (hover, click, wheel) and puts everything back
  function exercise() {
    const r = canvas.getBoundingClientRect();
    const x = r.left + MARGIN.left + plotW() * 0.3, y = r.top + MARGIN.top + plotH() * 0.9;
    canvas.dispatchEvent(new MouseEvent('mousemove', {clientX: x, clientY: y, bubbles: true}));
    const tooltipShown = !tooltip.hidden && tooltip.textContent.includes('step');
    canvas.dispatchEvent(new MouseEvent('mousedown', {clientX: x, clientY: y, bubbles: true}));
    canvas.dispatchEvent(new MouseEvent('mouseup', {clientX: x, clientY: y, bubbles: true}));
    const clicked = {step: selectedStep, entry: state.entry, heading: document.getElementById('state-when').textContent};
    const before = view.x1 - view.x0;
    canvas.dispatchEvent(new WheelEvent('wheel', {clientX: x, clientY: y, deltaY: -300, bubbles: true, cancelable: true}));
    const zoomed = view.x1 - view.x0 < before;
    view.x0 = 0; view.x1 = steps + 1;
    hoverStep = -1; hideTooltip(); pinned = null;
    selectEntry(H.peak_allocated_entry);
    showLargestAt(selectedStep);
    stale = true; paint();
    return {tooltip: tooltipShown, clicked_step: clicked.step, clicked_entry: clicked.entry,
      expected_entry: D.step_entry[Math.max(0, clicked.step)], heading: clicked.heading, zoomed};
  }

  // the frames toggle: how many frames the detail panel lists by default and with C++/PyTorch frames shown
  function exerciseFrames() {
    const detail = document.getElementById('detail');
    const shown = () => detail.querySelectorAll('ul.frames li:not(.muted)').length;
    const byDefault = shown(), note = detail.querySelector('.hidden-frames') !== null;
    showInternal.checked = true; showInternal.dispatchEvent(new Event('change'));
    const all = shown();
    showInternal.checked = false; showInternal.dispatchEvent(new Event('change'));
    return {shown_default: byDefault, shown_all: all, hidden_note: note, restored: shown() === byDefault};
  }

  let firstFrameMs = -1;
  function selfCheck(renderMs, interaction) {
    const cards = {};
    for (const el of document.querySelectorAll('.card')) {
      cards[el.dataset.figure] = el.querySelector('.value').textContent;
    }
    const check = {
      ok: errors.length === 0,
      state_page: stateOnly,
      errors,
      steps,
      bands: nBands,
      bands_drawn: bandsDrawn,
      timeline_pixels: nonBlankPixels(canvas),
      state_pixels: nonBlankPixels(stateCanvas),
      cards,
      headline: H,
      state_at_peak: state ? {entry: state.entry, segments: state.segments.length, reserved: state.reserved,
        allocated: state.allocated, largest_free: state.largestFree, free_blocks: state.freeBlocks} : null,
      interaction,
      parse_ms: Math.round(parseMs * 10) / 10,
      render_ms: Math.round(renderMs * 10) / 10,
      load_ms: Math.round((performance.now() - T0) * 10) / 10,
      state_ms: round1(timings.state_ms), redraw_ms: round1(timings.redraw_ms),
      zoomed_redraw_ms: round1(timings.zoomed_redraw_ms), moving_redraw_ms: round1(timings.moving_redraw_ms), hover_ms: round1(timings.hover_ms), draw_parts: drawParts,
      first_frame_ms: Math.round(firstFrameMs),
      since_navigation_ms: Math.round(performance.now())
    };
    const pre = document.getElementById('selfcheck');
    pre.textContent = JSON.stringify(check);
    document.body.dataset.rendered = 'true';
  }

  try {
    if (stateOnly) {
      document.getElementById('timeline-panel').hidden = true;
      renderCards();
      const ts = performance.now();
      selectEntry(-1); // the state before the (empty) trace: the state at the dump
      timings.state_ms = performance.now() - ts;
      selfCheck(performance.now() - ts, null);
      return;
    }
    renderCards();
    renderLegend();
    const tr = performance.now();
    drawTimeline();
    firstFrameMs = performance.now(); // since navigation start: when the first drawing of the timeline is done
    const ts = performance.now();
    selectEntry(H.peak_allocated_entry);
    timings.state_ms = performance.now() - ts;
    showLargestAt(selectedStep);
    drawTimeline();
    const renderMs = performance.now() - tr;
    measureInteraction();
    const interaction = exercise();
    interaction.frames = exerciseFrames();
    selfCheck(renderMs, interaction);
  } catch (e) {
    errors.push(String(e && e.stack || e));
    document.getElementById('selfcheck').textContent = JSON.stringify({ok: false, errors});
  }
})();

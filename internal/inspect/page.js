// murphy inspect: draws the page from the JSON in #murphy-data.
// Every string from the data is written with textContent or setAttribute,
// never parsed as markup: responses are untrusted model output.
(function () {
  'use strict';
  var SVGNS = 'http://www.w3.org/2000/svg';
  var SX = 26, SY = 66, R = 9, PAD = 22;
  var body = document.body;
  var data = null;
  var metric = 'reward';
  var painted = []; // [shape element, node]
  var byKey = {};   // tree id + '\u0000' + item id -> {tree, item, kind, g}
  var selected = null;

  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    if (attrs) { for (var k in attrs) { if (Object.prototype.hasOwnProperty.call(attrs, k)) { e.setAttribute(k, attrs[k]); } } }
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    return e;
  }
  function sv(tag, attrs, text) {
    var e = document.createElementNS(SVGNS, tag);
    if (attrs) { for (var k in attrs) { if (Object.prototype.hasOwnProperty.call(attrs, k)) { e.setAttribute(k, String(attrs[k])); } } }
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    return e;
  }
  function add(parent) { for (var i = 1; i < arguments.length; i++) { if (arguments[i]) { parent.appendChild(arguments[i]); } } return parent; }
  function fmt(x, d) {
    if (typeof x !== 'number' || !isFinite(x)) { return String(x); }
    d = d === undefined ? 3 : d;
    if (Math.abs(x) < 0.5 * Math.pow(10, -d)) { x = 0; } // no "-0.000"
    return x.toFixed(d);
  }
  function signed(x) { var s = fmt(x); return (s.charAt(0) !== '-' && Number(s) !== 0 ? '+' : '') + s; }
  function pct(a, b) { return b ? (100 * a / b).toFixed(1) + '%' : 'n/a'; }
  function key(tree, id) { return tree + '\u0000' + id; }

  // ---- colour scales ----
  var RAMP = [[215, 48, 39], [254, 224, 139], [26, 152, 80]];     // 0 → 1: red, yellow, green
  var DIVERGE = [[197, 27, 125], [247, 247, 247], [77, 146, 33]];  // − → 0 → +
  function lerp3(stops, t) {
    t = Math.max(0, Math.min(1, t));
    var s = t < 0.5 ? 0 : 1, u = t < 0.5 ? t * 2 : (t - 0.5) * 2;
    var a = stops[s], b = stops[s + 1];
    return [0, 1, 2].map(function (i) { return Math.round(a[i] + (b[i] - a[i]) * u); });
  }
  function rgb(c) { return 'rgb(' + c[0] + ',' + c[1] + ',' + c[2] + ')'; }
  var domain = {};
  function computeDomains() {
    var lo = 0, hi = 1, amax = 0;
    data.trees.forEach(function (t) {
      (t.nodes || []).forEach(function (n) {
        if (n.ghost) { return; }
        [n.reward, n.credited].forEach(function (x) { if (isFinite(x)) { lo = Math.min(lo, x); hi = Math.max(hi, x); } });
        if (isFinite(n.advantage)) { amax = Math.max(amax, Math.abs(n.advantage)); }
      });
    });
    domain.reward = domain.credited = [lo, hi];
    domain.advantage = [-(amax || 1), amax || 1];
  }
  function colourOf(n) {
    var v = n[metric], d = domain[metric];
    var t = (v - d[0]) / (d[1] - d[0]);
    return lerp3(metric === 'advantage' ? DIVERGE : RAMP, t);
  }
  function inkOn(c) { return (0.299 * c[0] + 0.587 * c[1] + 0.114 * c[2]) > 140 ? '#1d2330' : '#ffffff'; }

  // ---- labels ----
  var CAUSE = {
    passed: '\u2713', wrong_answer: 'WA', runtime_error: 'RE', compile_error: 'CE', timeout: 'TO',
    memory: 'ME', output_limit: 'OL', sandbox_error: 'SB', not_run: 'NR'
  };
  function causeCode(n) {
    var c = n.cause || n.status || '';
    if (CAUSE[c]) { return CAUSE[c]; }
    if (c.indexOf('infra.') === 0) { return 'IF'; }
    if (c.indexOf('degenerate.') === 0) { return 'DG'; }
    return c ? c.slice(0, 2).toUpperCase() : '';
  }
  var ROUTE_NAME = { train: 'train', masked: 'masked (zero loss weight)', last_step_penalty: 'last-step penalty' };

  function shapeFor(route, x, y, r) {
    if (route === 'masked') {
      return sv('rect', { x: x - r, y: y - r, width: 2 * r, height: 2 * r, rx: 2, 'stroke-dasharray': '3 2' });
    }
    if (route === 'last_step_penalty') {
      var p = [[x, y - r - 2], [x + r + 2, y], [x, y + r + 2], [x - r - 2, y]].map(function (q) { return q.join(','); }).join(' ');
      return sv('polygon', { points: p });
    }
    return sv('circle', { cx: x, cy: y, r: r });
  }

  // ---- header ----
  function renderMeta() {
    var m = document.getElementById('meta');
    var parts = ['source: ' + data.source, 'generated ' + data.generated_at,
      data.total_trees + ' trees' + (data.trees.length < data.total_trees ? ' (' + data.trees.length + ' shown)' : ''),
      data.nodes + ' nodes', data.placeholders + ' placeholder marks for missing members'];
    if (data.ghosts) { parts.push(data.ghosts + ' missing parents drawn'); }
    if (data.duplicates) { parts.push(data.duplicates + ' duplicate rows ignored'); }
    if (data.skipped) { parts.push(data.skipped + ' records skipped'); }
    add(m, el('div', null, parts.join(' · ')));
    (data.configs || []).forEach(function (c) {
      var bits = ['strategy=' + c.strategy];
      if (c.strategy === 'mers') { bits.push('gamma=' + c.gamma, 'z=' + c.z); }
      bits.push('advantage=' + c.advantage + (c.unbiased_std ? ' (unbiased std)' : ''));
      if (c.intrap_k) { bits.push('intrap_k=' + c.intrap_k); }
      if (c.interp_m) { bits.push('interp_m=' + c.interp_m); }
      if (c.interp_threshold) { bits.push('interp_threshold=' + c.interp_threshold); }
      if (c.prune_order && c.prune_order.length) { bits.push('prune_order=' + c.prune_order.join(',')); }
      if (c.drop_zero_signal) { bits.push('drop_zero_signal'); }
      add(m, el('div', { 'class': 'cfg' }, 'credit: ' + bits.join(' ')));
    });
    (data.notes || []).forEach(function (s) { add(m, el('div', null, 'note: ' + s)); });
  }

  function renderLegend() {
    var lg = document.getElementById('legend');
    lg.textContent = '';
    var d = domain[metric];
    var w = 160, h = 12;
    var s = sv('svg', { width: w + 70, height: 26, role: 'img' });
    var defs = sv('defs');
    var grad = sv('linearGradient', { id: 'legend-grad', x1: 0, x2: 1, y1: 0, y2: 0 });
    [0, 0.25, 0.5, 0.75, 1].forEach(function (t) {
      add(grad, sv('stop', { offset: t, 'stop-color': rgb(lerp3(metric === 'advantage' ? DIVERGE : RAMP, t)) }));
    });
    add(s, add(defs, grad));
    add(s, sv('rect', { x: 30, y: 2, width: w, height: h, fill: 'url(#legend-grad)', stroke: '#9aa1ad' }));
    add(s, sv('text', { x: 26, y: 12, 'text-anchor': 'end', 'class': 'lbl' }, fmt(d[0], 2)));
    add(s, sv('text', { x: 34 + w, y: 12, 'class': 'lbl' }, fmt(d[1], 2)));
    var name = { reward: 'reward', credited: 'credited reward', advantage: 'advantage' }[metric];
    add(lg, add(el('span', { 'class': 'item' }, name + ': '), s));
    function mark(label, build) {
      var m = sv('svg', { width: 26, height: 26 });
      build(m);
      add(lg, add(el('span', { 'class': 'item' }), m, document.createTextNode(label)));
    }
    function shaped(route) { return function (m) { var sh = shapeFor(route, 13, 13, 8); sh.setAttribute('fill', '#d9dde3'); sh.setAttribute('stroke', '#5b6270'); add(m, sh); }; }
    mark('train', shaped('train'));
    mark('masked', shaped('masked'));
    mark('last-step penalty', shaped('last_step_penalty'));
    mark('failed node credited by a passing descendant', function (m) {
      add(m, sv('circle', { cx: 13, cy: 13, r: 7, fill: '#d9dde3', stroke: '#5b6270' }), sv('circle', { cx: 13, cy: 13, r: 10, 'class': 'ring' }));
    });
    mark('missing members (pruned / dropped), with count', function (m) {
      add(m, add(sv('g', { 'class': 'faded' }), sv('circle', { cx: 13, cy: 13, r: 8, fill: '#fff', stroke: '#5b6270', 'stroke-dasharray': '3 2' }),
        sv('text', { x: 13, y: 16.5, 'text-anchor': 'middle', 'font-size': 9 }, 'n')));
    });
    add(lg, el('span', { 'class': 'item' }, 'labels: \u2713 passed, WA wrong answer, RE runtime error, CE compile error, TO timeout, ME memory, OL output limit, IF infrastructure, DG degenerate'));
  }

  // ---- runs ----
  function renderRuns() {
    var box = document.getElementById('runs');
    add(box, el('h2', null, 'Runs'));
    data.runs.forEach(function (r) {
      var sec = add(el('div', { 'class': 'run' }), el('h2', null, 'run ' + (r.id || '(tree ids name no run)')));
      add(sec, el('div', { 'class': 'facts' }, r.trees + ' trees, ' + r.solved + ' solved (' + pct(r.solved, r.trees) + '), ' +
        r.incomplete + ' incomplete, ' + r.nodes + ' nodes, ' + r.pruned_nodes + ' pruned nodes, ' + r.placeholders + ' placeholder marks'));
      var tbl = el('table', { 'class': 'turns' });
      var head = el('tr');
      ['turn', 'nodes', 'pass rate', 'masked', 'last-step', 'mean reward', 'mean credited', 'mean advantage', 'failed',
        'credited > reward', 'of which: a descendant passed'].forEach(function (h) { add(head, el('th', null, h)); });
      add(tbl, head);
      r.turns.forEach(function (t) {
        var tr = el('tr');
        [t.turn, t.nodes, pct(t.passed, t.nodes), t.masked, t.last_step_penalty, fmt(t.mean_reward), fmt(t.mean_credited),
          signed(t.mean_advantage), t.failed, t.lifted + ' (' + pct(t.lifted, t.failed) + ')', t.lifted_by_success]
          .forEach(function (v) { add(tr, el('td', null, v)); });
        add(tbl, tr);
      });
      add(sec, tbl);
      add(sec, el('h3', null, 'Reward and credited reward per turn'));
      var charts = add(el('div', { 'class': 'charts' }));
      r.turns.forEach(function (t) { add(charts, histogram(r, t)); });
      add(sec, charts);
      add(sec, el('h3', null, 'Credit flow to failed nodes per turn'));
      add(sec, add(el('div', { 'class': 'charts' }), creditFlow(r)));
      add(box, sec);
    });
  }

  function histogram(r, t) {
    var bins = r.edges.length - 1, bw = 14, gap = 6, h = 110, left = 30, top = 10;
    var w = left + bins * (2 * bw + gap) + 10;
    var maxc = 1;
    t.reward_hist.concat(t.credited_hist).forEach(function (c) { maxc = Math.max(maxc, c); });
    var s = sv('svg', { width: w, height: h + top + 34, 'data-chart': 'histogram', 'data-turn': t.turn });
    add(s, sv('line', { x1: left, y1: top + h, x2: w - 6, y2: top + h, 'class': 'axis' }));
    add(s, sv('text', { x: left - 4, y: top + 8, 'text-anchor': 'end', 'class': 'lbl' }, maxc));
    add(s, sv('text', { x: left - 4, y: top + h, 'text-anchor': 'end', 'class': 'lbl' }, 0));
    for (var i = 0; i < bins; i++) {
      var x = left + i * (2 * bw + gap) + gap / 2;
      [[t.reward_hist[i], '#6b8fc7', 'reward'], [t.credited_hist[i], '#e6a700', 'credited reward']].forEach(function (b, j) {
        var bh = h * b[0] / maxc;
        var rect = sv('rect', { x: x + j * bw, y: top + h - bh, width: bw - 1, height: Math.max(bh, 0), fill: b[1] });
        add(rect, sv('title', null, b[2] + ' in [' + fmt(r.edges[i], 2) + ', ' + fmt(r.edges[i + 1], 2) + (i === bins - 1 ? ']' : ')') + ': ' + b[0]));
        add(s, rect);
      });
      if (i === 0 || i === bins - 1 || i === Math.floor(bins / 2)) {
        add(s, sv('text', { x: x + (i === bins - 1 ? 2 * bw : 0), y: top + h + 12, 'text-anchor': i === bins - 1 ? 'end' : 'start', 'class': 'lbl' },
          i === bins - 1 ? fmt(r.edges[bins], 1) : fmt(r.edges[i], 1)));
      }
    }
    add(s, sv('rect', { x: left, y: top + h + 20, width: 10, height: 8, fill: '#6b8fc7' }));
    add(s, sv('text', { x: left + 14, y: top + h + 28, 'class': 'lbl' }, 'reward'));
    add(s, sv('rect', { x: left + 60, y: top + h + 20, width: 10, height: 8, fill: '#e6a700' }));
    add(s, sv('text', { x: left + 74, y: top + h + 28, 'class': 'lbl' }, 'credited'));
    return add(el('div', { 'class': 'chart' }), el('div', { 'class': 'cap' }, 'turn ' + t.turn + ' (' + t.nodes + ' nodes)'), s);
  }

  function creditFlow(r) {
    var bw = 22, groupW = 3 * bw + 18, h = 110, left = 30, top = 10;
    var w = left + r.turns.length * groupW + 10;
    var maxc = 1;
    r.turns.forEach(function (t) { maxc = Math.max(maxc, t.failed); });
    var s = sv('svg', { width: Math.max(w, 320), height: h + top + 34, 'data-chart': 'credit-flow' });
    add(s, sv('line', { x1: left, y1: top + h, x2: w - 6, y2: top + h, 'class': 'axis' }));
    add(s, sv('text', { x: left - 4, y: top + 8, 'text-anchor': 'end', 'class': 'lbl' }, maxc));
    var kinds = [['failed', '#b8bec8', 'failed nodes'], ['lifted', '#f3d27a', 'credited reward > reward'], ['lifted_by_success', '#e6a700', 'credited by a passing descendant']];
    r.turns.forEach(function (t, i) {
      var x0 = left + i * groupW + 9;
      kinds.forEach(function (k, j) {
        var v = t[k[0]], bh = h * v / maxc;
        var rect = sv('rect', { x: x0 + j * bw, y: top + h - bh, width: bw - 2, height: bh, fill: k[1] });
        add(rect, sv('title', null, 'turn ' + t.turn + ': ' + v + ' ' + k[2]));
        add(s, rect, sv('text', { x: x0 + j * bw + bw / 2 - 1, y: top + h - bh - 2, 'text-anchor': 'middle', 'class': 'lbl' }, v));
      });
      add(s, sv('text', { x: x0 + 1.5 * bw, y: top + h + 12, 'text-anchor': 'middle', 'class': 'lbl' }, 'turn ' + t.turn));
    });
    var lx = left;
    kinds.forEach(function (k) {
      add(s, sv('rect', { x: lx, y: top + h + 20, width: 10, height: 8, fill: k[1] }), sv('text', { x: lx + 13, y: top + h + 28, 'class': 'lbl' }, k[0] === 'failed' ? 'failed' : k[0] === 'lifted' ? 'got credit' : 'from a passing descendant'));
      lx += k[0] === 'lifted_by_success' ? 140 : 70;
    });
    return add(el('div', { 'class': 'chart' }), el('div', { 'class': 'cap' }, 'failed trained nodes, those whose credited reward exceeds their reward, and those with a passing descendant'), s);
  }

  // ---- trees ----
  function pos(item) { return [PAD + item.x * SX + SX / 2, PAD + item.depth * SY]; }

  function renderTree(t, open) {
    var det = el('details', { 'class': 'tree', 'data-tree-id': t.id });
    if (open) { det.open = true; }
    var sum = add(el('summary'), el('span', { 'class': 'id' }, t.id));
    var real = t.nodes.filter(function (n) { return !n.ghost; });
    var lifted = real.filter(function (n) { return n.lifted && n.solved_below; }).length;
    add(sum, el('span', { 'class': 'tag' }, 'task ' + t.task_id));
    add(sum, el('span', { 'class': 'tag' }, real.length + ' nodes'));
    add(sum, el('span', { 'class': 'tag ' + (t.solved ? 'good' : 'bad') }, t.solved ? 'solved' : 'unsolved'));
    if (t.pruned_nodes) { add(sum, el('span', { 'class': 'tag' }, t.pruned_nodes + ' pruned')); }
    if (lifted) { add(sum, el('span', { 'class': 'tag gold' }, lifted + ' failed node' + (lifted > 1 ? 's' : '') + ' credited by a passing descendant')); }
    if (t.incomplete) { add(sum, el('span', { 'class': 'tag bad' }, 'closed incomplete')); }
    det.setAttribute('data-lifted', lifted > 0 ? '1' : '0');
    det.setAttribute('data-search', (t.id + ' ' + t.task_id).toLowerCase());
    add(det, sum);

    var W = PAD * 2 + t.width * SX, H = PAD * 2 + t.depth * SY;
    var s = sv('svg', { width: W, height: H, viewBox: '0 0 ' + W + ' ' + H, 'class': 'tree-svg' });
    var edges = sv('g'), items = sv('g');
    add(s, edges, items);
    var where = { '': [PAD + (t.width * SX) / 2, PAD] };
    var upOf = {};
    t.nodes.forEach(function (n) { where[n.id] = pos(n); upOf[n.id] = n.up; });
    (t.placeholders || []).forEach(function (p) { where[p.id] = pos(p); });
    // the task root
    var root = sv('g', { 'class': 'task' });
    var rp = where[''];
    add(root, sv('rect', { x: rp[0] - 6, y: rp[1] - 6, width: 12, height: 12, fill: '#1d2330' }));
    add(root, sv('title', null, 'task ' + t.task_id));
    add(items, root);

    function edge(from, to, cls) {
      var a = where[from] || where[''], b = where[to];
      var mid = (a[1] + b[1]) / 2;
      add(edges, sv('path', { d: 'M' + a[0] + ',' + a[1] + ' C' + a[0] + ',' + mid + ' ' + b[0] + ',' + mid + ' ' + b[0] + ',' + b[1], 'class': cls }));
    }
    t.nodes.forEach(function (n) {
      var c = where[n.id];
      edge(n.up, n.id, 'edge' + (n.ghost || (n.up && isGhost(t, n.up)) ? ' faded' : '') + (n.lifted && n.solved_below ? ' lifted' : ''));
      var g = sv('g', { 'class': 'item' + (n.ghost ? ' faded ghost' : '') + (n.detached ? ' detached' : ''), tabindex: 0 });
      if (n.ghost) {
        g.setAttribute('data-ghost-id', n.id);
        add(g, sv('circle', { cx: c[0], cy: c[1], r: R, fill: '#fff', stroke: '#5b6270', 'stroke-dasharray': '3 2', 'class': 'shape' }));
        add(g, sv('text', { x: c[0], y: c[1] + 3.5, 'text-anchor': 'middle', 'font-size': 10, 'pointer-events': 'none' }, '?'));
        add(g, sv('title', null, 'missing parent ' + n.id + ' (not in the output) of ' + n.descendants + ' surviving nodes'));
      } else {
        g.setAttribute('data-node-id', n.id);
        if (n.lifted) { add(g, sv('circle', { cx: c[0], cy: c[1], r: R + 4, 'class': 'ring' + (n.solved_below ? '' : ' partial') })); }
        var sh = shapeFor(n.route, c[0], c[1], R);
        sh.setAttribute('class', 'shape');
        sh.setAttribute('stroke', n.in_stats ? '#3d4350' : '#8a909b');
        sh.setAttribute('stroke-width', '1.3');
        var lab = sv('text', { x: c[0], y: c[1] + 3, 'text-anchor': 'middle', 'font-size': 8, 'pointer-events': 'none' }, causeCode(n));
        add(g, sh, lab);
        painted.push([sh, n, lab]);
        add(g, sv('title', null, 'turn ' + n.turn + ' #' + n.index + ' · ' + (n.cause || n.status || 'no cause') + ' · ' + (ROUTE_NAME[n.route] || n.route) +
          '\nreward ' + fmt(n.reward) + ', credited ' + fmt(n.credited) + ', advantage ' + signed(n.advantage) +
          (n.total ? '\ntests ' + n.passed + '/' + n.total : '')));
      }
      g.addEventListener('click', function () { select(t.id, n.id); });
      g.addEventListener('keydown', function (e) { if (e.key === 'Enter') { select(t.id, n.id); } });
      byKey[key(t.id, n.id)] = { tree: t, item: n, kind: n.ghost ? 'ghost' : 'node', g: g };
      add(items, g);
    });
    (t.placeholders || []).forEach(function (p) {
      var c = where[p.id];
      edge(p.up, p.id, 'edge faded');
      var g = sv('g', { 'class': 'item faded placeholder', 'data-placeholder-id': p.id, 'data-count': p.count, tabindex: 0 });
      var r = p.count > 1 ? R + 1 : R;
      add(g, sv('circle', { cx: c[0], cy: c[1], r: r, fill: '#fff', stroke: '#5b6270', 'stroke-dasharray': '3 2', 'class': 'shape' }));
      add(g, sv('text', { x: c[0], y: c[1] + 3.5, 'text-anchor': 'middle', 'font-size': 10, 'pointer-events': 'none' }, p.count));
      add(g, sv('title', null, p.count + ' of ' + p.of + ' members missing: ' + p.reason));
      g.addEventListener('click', function () { select(t.id, p.id); });
      g.addEventListener('keydown', function (e) { if (e.key === 'Enter') { select(t.id, p.id); } });
      byKey[key(t.id, p.id)] = { tree: t, item: p, kind: 'placeholder', g: g };
      add(items, g);
    });
    var bodyDiv = add(el('div', { 'class': 'tree-body' }), add(el('div', { 'class': 'scroll' }), s));
    var notes = [];
    if (t.hidden_pruned) { notes.push(t.hidden_pruned + ' more pruned nodes were descendants of the pruned members (a pruned node takes its subtree; nothing of them is in the output).'); }
    if (t.nodes.some(function (n) { return n.detached; })) { notes.push('Nodes outlined red have parent links that never reach the root group (malformed input); they hang from the task.'); }
    notes.forEach(function (x) { add(bodyDiv, el('p', { 'class': 'note' }, x)); });
    add(det, bodyDiv);
    return det;
  }
  function isGhost(t, id) {
    var e = byKey[key(t.id, id)];
    if (e) { return e.kind === 'ghost'; }
    return t.nodes.some(function (n) { return n.id === id && n.ghost; });
  }

  function paint() {
    painted.forEach(function (p) {
      var c = colourOf(p[1]);
      p[0].setAttribute('fill', rgb(c));
      p[2].setAttribute('fill', inkOn(c));
    });
    renderLegend();
  }

  function renderTrees() {
    var box = document.getElementById('trees');
    add(box, el('h2', null, 'Trees'));
    if (data.trees.length < data.total_trees) {
      add(box, el('p', { 'class': 'muted' }, 'Showing the first ' + data.trees.length + ' of ' + data.total_trees + ' trees (--max-trees).'));
    }
    data.trees.forEach(function (t, i) { add(box, renderTree(t, i < 30)); });
  }

  function applyFilter() {
    var q = document.getElementById('filter').value.trim().toLowerCase();
    var only = document.getElementById('only-lifted').checked;
    var shown = 0;
    document.querySelectorAll('details.tree').forEach(function (d) {
      var ok = (!q || d.getAttribute('data-search').indexOf(q) >= 0) && (!only || d.getAttribute('data-lifted') === '1');
      d.hidden = !ok;
      if (ok) { shown++; }
    });
    document.getElementById('shown').textContent = shown + ' of ' + data.trees.length + ' trees shown';
  }

  // ---- detail panel ----
  function row(tbl, k, v, mono) { add(tbl, add(el('tr'), el('td', null, k), el('td', mono ? { 'class': 'mono' } : null, v))); }
  function textBlock(box, title, text, empty) {
    add(box, el('h3', null, title));
    if (text) { add(box, el('pre', { 'class': 'text' }, text)); } else { add(box, el('p', { 'class': 'muted' }, empty)); }
  }

  function select(treeID, id) {
    var e = byKey[key(treeID, id)];
    if (!e) { return; }
    if (selected) { selected.g.classList.remove('selected'); }
    selected = e;
    e.g.classList.add('selected');
    var det = e.g.closest('details');
    if (det && !det.open) { det.open = true; }
    var panel = document.getElementById('detail'), bd = document.getElementById('detail-body');
    bd.textContent = '';
    panel.hidden = false;
    body.classList.add('with-detail');
    var t = e.tree, it = e.item, tbl = el('table');
    if (e.kind === 'placeholder') {
      add(bd, el('h2', null, it.count + ' missing member' + (it.count > 1 ? 's' : '') + ' of group ' + it.group));
      row(tbl, 'tree', t.id, true);
      row(tbl, 'turn', it.turn);
      row(tbl, 'missing', it.count + ' of ' + it.of + ' requested');
      row(tbl, 'why', it.reason);
      row(tbl, 'sample indices', (it.indices || []).join(', ') || 'n/a');
      if (it.ids && it.ids.length) { row(tbl, 'node ids (derived)', it.ids.join(' '), true); }
      add(bd, tbl);
      add(bd, el('p', { 'class': 'muted' }, 'The output holds only the surviving nodes. This mark stands for the members this group lacks; their responses, and any subtrees they had, are not in the output.'));
      navButtons(bd, t, it.up);
    } else if (e.kind === 'ghost') {
      add(bd, el('h2', null, 'missing parent ' + it.id));
      row(tbl, 'tree', t.id, true);
      row(tbl, 'turn', it.turn);
      row(tbl, 'surviving descendants', it.descendants);
      add(bd, tbl);
      add(bd, el('p', { 'class': 'muted' }, 'This node is not in the output (its group was dropped as zero-signal, or the tree is incomplete), but nodes sampled from it are.'));
      navButtons(bd, t, it.up);
    } else {
      add(bd, el('h2', null, 'node ' + it.id));
      row(tbl, 'tree', t.id, true);
      row(tbl, 'task', t.task_id, true);
      row(tbl, 'turn', it.turn + ' of ' + t.max_turns);
      row(tbl, 'group', it.group_id + ' (' + it.group_size + ' requested), sample #' + it.index, true);
      row(tbl, 'parent', it.parent_id || '(root group: sampled from the task prompt)', true);
      row(tbl, 'route', ROUTE_NAME[it.route] || it.route);
      row(tbl, 'failure cause', it.cause || '(none)');
      row(tbl, 'status', it.status || 'n/a');
      row(tbl, 'finish reason', it.finish || 'n/a');
      row(tbl, 'tests', it.total ? it.passed + ' / ' + it.total + ' passed' : 'n/a');
      row(tbl, 'reward', fmt(it.reward, 4));
      row(tbl, 'credited reward', fmt(it.credited, 4) + (it.lifted ? '  (credit from descendants' + (it.solved_below ? ', one of which passed' : '') + ')' : ''));
      row(tbl, 'advantage', signed(it.advantage));
      row(tbl, 'in group statistics', it.in_stats ? 'yes' : 'no');
      row(tbl, 'children requested', it.children_requested + ' (' + it.descendants + ' surviving descendants)');
      row(tbl, 'policy', it.policy + ' v' + it.policy_version);
      row(tbl, 'response tokens', it.tokens);
      add(bd, tbl);
      navButtons(bd, t, it.parent_id, it.id);
      textBlock(bd, 'Prompt', data.prompts[it.prompt], '(empty)');
      textBlock(bd, 'Response', it.response, '(empty)');
      textBlock(bd, 'Feedback', it.feedback, 'No feedback column in this source (the Arrow files do not carry it; read --from-topic for it). A refinement prompt of this node\u2019s children quotes it.');
      add(bd, el('h3', null, 'Diff to the parent\u2019s response'));
      if (!it.parent_id) {
        add(bd, el('p', { 'class': 'muted' }, 'Root group: no parent response.'));
      } else if (!it.diff) {
        add(bd, el('p', { 'class': 'muted' }, 'The parent is not in the output.'));
      } else if (it.diff.length === 0) {
        add(bd, el('p', { 'class': 'muted' }, 'Identical to the parent\u2019s response.'));
      } else {
        var dv = el('div', { 'class': 'diff', 'data-diff-lines': it.diff.length });
        it.diff.forEach(function (l) {
          var cls = l.op === '+' ? 'add' : l.op === '-' ? 'del' : l.op === '@' ? 'hunk' : 'ctx';
          add(dv, el('div', { 'class': cls }, (l.op === '@' ? '' : l.op) + l.text));
        });
        add(bd, dv);
      }
    }
    try { history.replaceState(null, '', '#node=' + encodeURIComponent(treeID) + '/' + encodeURIComponent(id)); } catch (err) { /* file: URLs may refuse */ }
  }

  function navButtons(box, t, parent, self) {
    var bar = el('div');
    if (parent !== undefined && parent !== null && parent !== '' && byKey[key(t.id, parent)]) {
      var b = el('button', { 'class': 'nav', type: 'button' }, 'parent');
      b.addEventListener('click', function () { select(t.id, parent); });
      add(bar, b);
    }
    if (self) {
      t.nodes.filter(function (n) { return n.up === self; }).forEach(function (n) {
        var c = el('button', { 'class': 'nav', type: 'button' }, 'child #' + n.index + (n.ghost ? ' (missing)' : ''));
        c.addEventListener('click', function () { select(t.id, n.id); });
        add(bar, c);
      });
    }
    add(box, bar);
  }

  function fromHash() {
    var h = location.hash || '';
    if (h.indexOf('#node=') !== 0) { return; }
    var rest = h.slice(6), i = rest.lastIndexOf('/');
    if (i < 0) { return; }
    try { select(decodeURIComponent(rest.slice(0, i)), decodeURIComponent(rest.slice(i + 1))); } catch (err) { /* bad hash */ }
  }

  function main() {
    data = JSON.parse(document.getElementById('murphy-data').textContent);
    metric = document.getElementById('metric').value || 'reward'; // a reload may restore the selector
    computeDomains();
    renderMeta();
    renderRuns();
    renderTrees();
    paint();
    applyFilter();
    document.getElementById('metric').addEventListener('change', function (e) { metric = e.target.value; paint(); });
    document.getElementById('filter').addEventListener('input', applyFilter);
    document.getElementById('only-lifted').addEventListener('change', applyFilter);
    document.getElementById('detail-close').addEventListener('click', function () {
      document.getElementById('detail').hidden = true;
      body.classList.remove('with-detail');
      if (selected) { selected.g.classList.remove('selected'); selected = null; }
    });
    window.addEventListener('hashchange', fromHash);
    fromHash();
    if (selected) {
      var g = selected.g;
      window.addEventListener('load', function () { window.requestAnimationFrame(function () { g.scrollIntoView({ block: 'center' }); }); });
    }
    body.setAttribute('data-rendered-nodes', String(document.querySelectorAll('#trees [data-node-id]').length));
    body.setAttribute('data-rendered-placeholders', String(document.querySelectorAll('#trees [data-placeholder-id]').length));
    body.setAttribute('data-rendered-ghosts', String(document.querySelectorAll('#trees [data-ghost-id]').length));
    body.setAttribute('data-rendered-trees', String(document.querySelectorAll('#trees details.tree').length));
    body.setAttribute('data-expected-nodes', String(data.nodes));
    body.setAttribute('data-render-status', 'ok');
  }

  try {
    main();
  } catch (err) {
    body.setAttribute('data-render-status', 'error');
    body.setAttribute('data-render-error', String(err && err.message ? err.message : err));
    var p = document.getElementById('error');
    p.hidden = false;
    p.textContent = 'The page could not be drawn: ' + String(err && err.message ? err.message : err);
  }
})();

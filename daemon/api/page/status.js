// tandem's status page: keeps the server's first paint live. It reads
// /status every second and the new entries of /events, draws the timeline
// from the events, and sends POST /rebuild, /pause, /resume with the token
// the operator types, which lives in this closure only (never in storage).
// Text reaches the page through textContent only: node errors quote remote
// output. The Content-Security-Policy allows this one script and requests
// to this API, nothing else.
'use strict';
(function () {
	const SVG = 'http://www.w3.org/2000/svg';
	const POLL_MS = 1000;
	const HISTORY_S = 24 * 3600;	// PAGE_HISTORY_S in lib/api/statuspage.h
	const RECENT_ROWS = 6;
	const MAX_ROWS = 200;
	const REBUILDING = ['teardown', 'loading-image', 'starting-ray', 'waiting-ray',
		'starting-vllm', 'waiting-vllm'];
	const ASK = {
		'/rebuild': 'Rebuild: every node\'s containers are torn down and started again; '
			+ 'vLLM stops serving until the rebuild is done.',
		'/pause': 'Pause: tandemd stops all automatic action (no rebuild after a failure); '
			+ 'it keeps probing and showing the state.',
		'/resume': 'Resume: automatic action again (a rebuild starts if the cluster is not serving).'
	};
	const $ = (id) => document.getElementById(id);

	let status = null;
	let events = [];
	let lastSeq = 0;
	let hours = 6;
	let skewMs = 0;		// the daemon's clock minus this browser's
	let token = null;
	let pending = null;	// the POST waiting for the confirmation form
	let timer = null;
	let failingSince = null;
	let trace = null;	// GET /rebuilds/last; null: none yet
	// A rebuild ran while this page watched: tandemd has a trace. Before,
	// GET /rebuilds/last may answer 404 (none since tandemd started; it
	// adopts a serving cluster), which a browser logs as an error.
	let sawRebuild = false;

	function el(tag, cls, ...kids) {
		const e = document.createElement(tag);
		if (cls)
			e.className = cls;
		for (const k of kids)
			e.append(k === null || k === undefined || k === '' ? '—' : k);
		return e;
	}

	function svgEl(tag, attrs, title) {
		const e = document.createElementNS(SVG, tag);
		for (const [k, v] of Object.entries(attrs))
			e.setAttribute(k, v);
		if (title) {
			const t = document.createElementNS(SVG, 'title');
			t.textContent = title;
			e.append(t);
		}
		return e;
	}

	// States and actions are lower-case words; anything else gets no colour.
	function cls(prefix, w) {
		return prefix + (/^[a-z-]{1,24}$/.test(w || '') ? w : 'unknown');
	}

	function nowS() {
		return (Date.now() + skewMs) / 1000;
	}

	function utc(t, withDate) {
		const s = new Date(t * 1000).toISOString();
		return withDate ? s.slice(0, 10) + ' ' + s.slice(11, 19) : s.slice(11, 19);
	}

	function dur(s) {
		s = Math.max(0, Math.round(s));
		if (s < 60)
			return s + ' s';
		if (s < 3600)
			return Math.floor(s / 60) + ' min';
		if (s < 86400)
			return Math.floor(s / 3600) + ' h ' + Math.floor(s % 3600 / 60) + ' min';
		return Math.floor(s / 86400) + ' d ' + Math.floor(s % 86400 / 3600) + ' h';
	}

	function num(v) {
		return typeof v === 'number' ? String(v) : '—';
	}

	function fact(id, label, ...value) {
		const dd = el('dd', '', ...value);
		dd.id = id;
		return el('div', '', el('dt', '', label), dd);
	}

	function badge(id, prefix, word) {
		const b = el('span', 'badge ' + cls(prefix, word), word);
		b.id = id;
		return b;
	}

	function renderSummary(st) {
		const rec = st.recovery || {};
		const facts = el('dl', 'facts');
		const since = Date.parse(st.since) / 1000;
		let sinceEl = '—';

		if (!isNaN(since)) {
			const t = el('time', '', utc(since, true) + ' UTC');
			t.setAttribute('datetime', st.since);
			sinceEl = el('span', '', t, el('span', 'ago', ' (' + dur(nowS() - since) + ' ago)'));
		}
		facts.append(fact('since', 'since', sinceEl),
			fact('generation', 'generation', num(st.generation)),
			fact('rebuilds-hour', 'rebuilds in the last hour', num(rec.rebuilds_last_hour)));
		if (rec.attempt > 0)
			facts.append(fact('attempt', 'failed attempts in a row', num(rec.attempt)));
		if (st.action === 'backoff')
			facts.append(fact('next-attempt', 'next attempt in',
				Math.round(rec.next_attempt_s || 0) + ' s'));
		if (rec.halted)
			facts.append(fact('halted', 'retries', 'stopped: fix the cause, then Rebuild'));
		if (rec.awaiting && rec.awaiting.message)
			facts.append(fact('awaiting', 'awaiting', rec.awaiting.message));
		if (st.budget && st.budget.text)
			facts.append(fact('budget', 'restart budget', st.budget.text));
		if (st.config && st.config.running)
			facts.append(fact('config-running', 'config running', st.config.running +
				(st.config.message ? ': ' + st.config.message : '')));
		$('summary-body').replaceChildren(
			el('div', 'badges', badge('state', 'st-', st.state), badge('action', 'act-', st.action),
				badge('mode', 'mode-', st.mode)), facts);
	}

	function renderDiagnosis(d) {
		$('diagnosis').hidden = !d;
		if (!d)
			return $('diag-body').replaceChildren();
		$('diag-body').replaceChildren(
			el('p', '', el('code', 'code', d.code), ' ', el('span', 'msg', d.message)),
			el('p', 'remedy', el('b', '', 'Remedy:'), ' ', d.remedy));
	}

	function renderWarnings(ws) {
		ws = Array.isArray(ws) ? ws : [];
		$('warnings').hidden = ws.length === 0;
		$('warn-list').replaceChildren(...ws.map((w) => {
			const li = el('li', '', el('code', '', w.code), ' ');
			if (w.node)
				li.append(el('b', '', w.node), ': ');
			li.append(w.message || '');
			return li;
		}));
	}

	function yesNo(v) {
		if (v === true)
			return el('td', 'ok', 'yes');
		if (v === false)
			return el('td', 'bad', 'no');
		return el('td', 'none', '—');
	}

	// The devices column: GPUs, or NPUs on an Ascend cluster (/status accelerator).
	function devicesWord(a) {
		return a === 'ascend' ? 'NPUs' : a === 'none' ? 'devices' : 'GPUs';
	}

	function renderNodes(ns, accelerator) {
		$('th-devices').textContent = devicesWord(accelerator);
		$('node-rows').replaceChildren(...(ns || []).map((n) => {
			const name = el('th', '', n.name);
			name.setAttribute('scope', 'row');
			return el('tr', '', name, el('td', '', n.role), el('td', '', n.ssh_host),
				el('td', '', n.ip), yesNo(n.reachable),
				el('td', cls('ctr-', n.container), n.container), yesNo(n.ray_alive),
				el('td', '', num(n.gpus)), el('td', n.last_error ? 'err' : 'none', n.last_error));
		}));
	}

	function renderServices(st) {
		const ray = st.ray || {};
		const v = st.vllm || {};
		const rayP = el('p', '');
		rayP.id = 'ray';
		if (typeof ray.alive_nodes !== 'number')
			rayP.append('no ', el('code', '', 'ray status'),
				' seen (none yet, or topology dp, which runs no Ray)');
		else
			rayP.append(num(ray.alive_nodes) + ' of ' + num(ray.expect_nodes) + ' nodes alive · '
				+ num(ray.gpus) + ' of ' + num(ray.expect_gpus) + ' GPUs');
		const dl = el('dl', 'facts',
			fact('vllm-healthy', 'healthy', v.healthy ? el('span', 'ok', 'yes') : el('span', 'bad', 'no')),
			fact('vllm-model', 'model', v.model), fact('vllm-url', 'API', v.url),
			fact('vllm-gmu', '--gpu-memory-utilization', num(v.gpu_memory_utilization)));
		dl.id = 'vllm';
		$('svc-body').replaceChildren(el('div', 'svc', el('h3', '', 'Ray'), rayP),
			el('div', 'svc', el('h3', '', 'vLLM'), dl));
	}

	// State bands: runs of events with the same "to" state. The state at
	// the window's start is that of the last event before it; before the
	// first event the daemon knows of, nothing is drawn.
	function bands(t0, t1) {
		const out = [];
		let cur = null;
		let start = 0;

		for (const e of events) {
			if (e.time < t0) {
				cur = e.to;
				start = t0;
				continue;
			}
			if (cur === null) {
				cur = e.to;
				start = e.time;
			} else if (e.to !== cur) {
				out.push({ state: cur, t0: start, t1: e.time });
				cur = e.to;
				start = e.time;
			}
		}
		if (cur === null && status) {
			// no event at all: what /status says, since it says so
			const since = Date.parse(status.since) / 1000;
			cur = status.state;
			start = isNaN(since) ? t0 : Math.max(t0, since);
		}
		if (cur !== null)
			out.push({ state: cur, t0: start, t1: t1 });
		return out;
	}

	// A rebuild starts when the action becomes teardown (lib/policy/fsm.c), but
	// not on the way back from loading-image, which is inside one.
	function rebuildStarts(t0, t1) {
		const out = [];
		let prev = null;
		for (const e of events) {
			if (e.action === 'teardown' && prev !== 'teardown' && prev !== 'loading-image' &&
			    e.time >= t0 && e.time <= t1)
				out.push(e);
			prev = e.action;
		}
		return out;
	}

	function tickStep(span) {
		const steps = [600, 1800, 3600, 3 * 3600, 6 * 3600];
		return steps.find((s) => span / s <= 8) || 6 * 3600;
	}

	function renderTimeline() {
		const box = $('timeline');
		const W = Math.max(320, box.clientWidth || 800);
		const H = 64, top = 4, bandH = 34;
		// an event just fetched may be a little ahead of the clock estimate
		const last = events.length > 0 ? events[events.length - 1].time : 0;
		const t1 = Math.max(nowS(), last), t0 = t1 - hours * 3600;
		const x = (t) => Math.round((t - t0) / (t1 - t0) * W * 10) / 10;
		const s = svgEl('svg', { viewBox: '0 0 ' + W + ' ' + H, width: W, height: H,
			role: 'img', 'aria-label': 'cluster state over the last ' + hours + ' h' });

		s.append(svgEl('rect', { class: 'track', x: 0, y: top, width: W, height: bandH },
			'no record'));
		const bs = bands(t0, t1);
		for (const b of bs)
			s.append(svgEl('rect', { class: 'seg ' + cls('st-', b.state), 'data-state': b.state,
				x: x(b.t0), y: top, width: Math.max(1, x(b.t1) - x(b.t0)), height: bandH },
			b.state + ': ' + utc(b.t0) + ' – ' + utc(b.t1) + ' UTC (' + dur(b.t1 - b.t0) + ')'));
		for (const e of rebuildStarts(t0, t1)) {
			const title = 'rebuild started ' + utc(e.time, true) + ' UTC: ' + e.reason;
			s.append(svgEl('line', { class: 'rebuild', x1: x(e.time), x2: x(e.time),
				y1: top - 2, y2: top + bandH + 2 }, title));
			s.append(svgEl('path', { class: 'rebuild-head', d: 'M' + (x(e.time) - 4) + ' ' + (top + bandH + 2)
				+ 'h8l-4 -6z' }, title));
		}
		const step = tickStep(t1 - t0);
		for (let t = Math.ceil(t0 / step) * step; t < t1; t += step) {
			s.append(svgEl('line', { class: 'tick', x1: x(t), x2: x(t), y1: top + bandH, y2: top + bandH + 6 }));
			if (x(t) < 20 || x(t) > W - 20)
				continue;	// a label cut by the edge reads wrong
			const label = svgEl('text', { x: x(t), y: H - 2, 'text-anchor': 'middle' });
			label.textContent = utc(t).slice(0, 5);
			s.append(label);
		}
		// history shorter than the window: say so where it is missing
		const known = bs.length > 0 ? x(bs[0].t0) : W;
		if (known > 140) {
			const label = svgEl('text', { x: known / 2, y: top + bandH / 2 + 4, 'text-anchor': 'middle' });
			label.textContent = bs.length > 0 ? 'no record before ' + utc(bs[0].t0).slice(0, 5) : 'no record';
			s.append(label);
		}
		box.replaceChildren(s);
		box.dataset.segments = bs.length;

		const up = events.some((e) => e.to === 'nodes-up') || (status && status.state === 'nodes-up')
			? 'nodes-up' : 'ray-up';
		$('legend').replaceChildren(...['serving', up, 'absent', 'degraded'].map((w) =>
			el('span', '', el('i', cls('st-', w === 'nodes-up' ? 'ray-up' : w)), w)),
		el('span', '', el('i', 'rebuild'), 'rebuild'));

		// the newest few in sight, the rest of the window folded
		const rows = events.filter((e) => e.time >= t0).slice(-MAX_ROWS).reverse().map((e) =>
			el('tr', '', el('td', '', utc(e.time, true)),
				el('td', '', e.from === e.to ? e.to : e.from + ' → ' + e.to),
				el('td', '', e.action), el('td', '', e.reason)));
		$('event-rows').replaceChildren(...rows.slice(0, RECENT_ROWS));
		$('event-rows-older').replaceChildren(...rows.slice(RECENT_ROWS));
		$('events-older').hidden = rows.length <= RECENT_ROWS;
		$('events-older-sum').textContent = (rows.length - RECENT_ROWS) + ' earlier events in '
			+ 'this window' + (rows.length === MAX_ROWS ? ' (the last ' + MAX_ROWS + ')' : '');
		if (rows.length === 0)
			$('event-rows').append(el('tr', 'empty', el('td', 'none', 'no event in this window')));
	}

	function render() {
		renderSummary(status);
		renderDiagnosis(status.diagnosis);
		renderWarnings(status.warnings);
		renderNodes(status.nodes, status.accelerator);
		renderServices(status);
		renderTimeline();
		$('name').textContent = status.name;
		document.title = status.name + ': ' + status.state + ' · tandem';
	}

	// vLLM's own timing of its start-up in the last rebuild, each phase's
	// share of it: what of a recovery was compile, not tandem (issue 47).
	function renderPhases(t) {
		const ph = t && !t.running ? (t.vllm_phases || []) : [];
		$('phases-card').hidden = ph.length === 0;
		if (ph.length === 0)
			return;
		$('phases-sum').textContent = 'Rebuild ' + t.generation + ': ' + dur(t.wall_ms / 1000)
			+ ', of which tandem\'s own ' + t.overhead_ms + ' ms. The phases overlap '
			+ '(init_engine holds the compile and the graph capture).';
		$('phase-rows').replaceChildren(...ph.map((p) => el('tr', '', el('td', '', p.phase),
			el('td', '', p.node || '-'), el('td', '', p.seconds.toFixed(2)),
			el('td', '', typeof p.share === 'number' ? Math.round(p.share * 100) + ' %' : '-'))));
	}

	function addEvents(list) {
		for (const e of list)
			if (e.seq > lastSeq) {
				events.push(e);
				lastSeq = e.seq;
			}
		// keep the longest window's worth, and the one event before it
		const cut = nowS() - HISTORY_S;
		let i = 0;
		while (i + 1 < events.length && events[i + 1].time < cut)
			i++;
		if (i > 0)
			events = events.slice(i);
	}

	function setLive(ok, why) {
		const live = $('live');
		if (ok) {
			failingSince = null;
			live.className = 'live';
			live.textContent = 'live · updated ' + utc(nowS()) + ' UTC';
			return;
		}
		failingSince = failingSince || nowS();
		live.className = 'live stale';
		live.textContent = 'tandemd is not answering since ' + utc(failingSince) + ' UTC ('
			+ why + '); what is shown may be out of date';
	}

	async function getJSON(path) {
		const r = await fetch(path, { cache: 'no-store' });
		if (!r.ok)
			throw new Error(path + ': HTTP ' + r.status);
		return r.json();
	}

	async function poll() {
		timer = null;
		try {
			const st = await getJSON('/status');
			// from the last event already known: if it is not there as it
			// was, the daemon's log is another one (a new state dir)
			const last = events[events.length - 1];
			const got = await getJSON('/events?since=' + (last ? last.seq - 1 : 0));
			if (last && (got.length === 0 || got[0].seq !== last.seq || got[0].time !== last.time)) {
				events = [];
				lastSeq = 0;
				addEvents(await getJSON('/events'));
			} else {
				addEvents(got);
			}
			// the trace again only when a rebuild began or was running
			sawRebuild = sawRebuild || REBUILDING.includes(st.action);
			if (sawRebuild && (!trace || trace.running || trace.generation !== st.generation)) {
				try {
					trace = await getJSON('/rebuilds/last');
				} catch (e) {
					trace = null;	// 404: no rebuild since tandemd started
				}
			}
			status = st;
			render();
			renderPhases(trace);
			setLive(true);
		} catch (e) {
			setLive(false, e.message || String(e));
		}
		timer = setTimeout(poll, POLL_MS);
	}

	// The next poll at once, unless one is running (it reschedules itself).
	function pollSoon() {
		if (timer !== null) {
			clearTimeout(timer);
			poll();
		}
	}

	function ask(path) {
		pending = path;
		$('confirm-what').textContent = ASK[path];
		$('token-label').hidden = $('token').hidden = token !== null;
		$('confirm').hidden = false;
		(token === null ? $('token') : $('b-send')).focus();
	}

	async function send(path) {
		const answer = $('answer');
		answer.className = 'answer';
		answer.textContent = 'POST ' + path + ' …';
		try {
			const r = await fetch(path, { method: 'POST', cache: 'no-store',
				headers: { Authorization: 'Bearer ' + token } });
			let msg = '';
			try {
				const j = await r.json();
				msg = j.ok || j.error || '';
			} catch (e) {
				msg = '';
			}
			if (r.status === 401 || r.status === 403)
				token = null;	// refused: ask again next time
			answer.className = 'answer ' + (r.status < 300 ? 'ok' : 'bad');
			answer.textContent = 'POST ' + path + ': ' + r.status + ' ' + msg;
		} catch (e) {
			answer.className = 'answer bad';
			answer.textContent = 'POST ' + path + ': no answer (' + (e.message || e) + ')';
		}
		pollSoon();
	}

	function start() {
		let data = null;
		try {
			data = JSON.parse($('initial').textContent);
		} catch (e) {
			data = null;
		}
		if (data && data.status) {
			skewMs = data.now * 1000 - Date.now();
			status = data.status;
			addEvents(data.events || []);
		}
		// the shortest window that holds all the history there is
		if (events.length > 0) {
			const age = nowS() - events[0].time;
			hours = [1, 6, 24].find((h) => age <= h * 3600) || 24;
		}
		for (const o of $('windows').querySelectorAll('button'))
			o.classList.toggle('on', Number(o.dataset.hours) === hours);
		$('timeline-card').hidden = false;
		$('controls').hidden = false;
		for (const b of $('buttons').querySelectorAll('button'))
			b.addEventListener('click', () => ask(b.dataset.path));
		$('confirm').addEventListener('submit', (ev) => {
			ev.preventDefault();
			if (token === null) {
				token = $('token').value.trim();
				$('token').value = '';
				if (token === '') {
					token = null;
					return;
				}
			}
			$('confirm').hidden = true;
			send(pending);
		});
		$('b-cancel').addEventListener('click', () => {
			$('confirm').hidden = true;
			$('token').value = '';
		});
		for (const b of $('windows').querySelectorAll('button'))
			b.addEventListener('click', () => {
				hours = Number(b.dataset.hours);
				for (const o of $('windows').querySelectorAll('button'))
					o.classList.toggle('on', o === b);
				renderTimeline();
			});
		window.addEventListener('resize', renderTimeline);
		if (status)
			render();
		poll();
	}

	start();
})();

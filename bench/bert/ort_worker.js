// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The npushm authors
//
// ort_worker.js - an ONNX Runtime serving worker for the BERT benchmark, run
// by Debian's nodejs with the onnxruntime-node package run.sh installs into a
// scratch folder (NODE_PATH). It serves the batches bench.py wrote (the same
// token ids, types and masks the engine and PyTorch serve) with a model from
// onnx_export.py or onnx_int8.py, and speaks the protocol of
// apps/bert/demo/serving.py: with --hold it prints "ready" after a warm-up
// batch, waits for a line on stdin, serves, prints one JSON report (the fields
// of npushm-bert --json), then waits for the end of stdin.
//
//   node ort_worker.js --model M.onnx --batches FILE --threads N [--hold]
//   node ort_worker.js --model M.onnx --batches FILE --threads N --out PREFIX
//
// --out runs batch 0 once and writes PREFIX.hidden.f32 and PREFIX.pooled.f32
// (raw little-endian float32) instead. The batches file is one JSON line
// {"batches": [[B, S], ...]} followed, per batch, by ids, types and mask as
// little-endian int64 [B, S].
'use strict';

const fs = require('fs');

function fail(msg) {
	process.stderr.write('ort_worker: ' + msg + '\n');
	process.exit(1);
}

let ort;
try {
	ort = require('onnxruntime-node');
} catch (e) {
	fail('cannot load onnxruntime-node (' + e.message + '); bench/bert/run.sh installs it and sets NODE_PATH');
}

function parseArgs(argv) {
	const a = { threads: 1, hold: false };
	for (let i = 0; i < argv.length; i++) {
		const k = argv[i];
		if (k === '--hold') {
			a.hold = true;
		} else if (['--model', '--batches', '--threads', '--out'].includes(k) && i + 1 < argv.length) {
			a[k.slice(2)] = argv[++i];
		} else {
			fail('unknown argument ' + k);
		}
	}
	if (!a.model || !a.batches)
		fail('usage: ort_worker.js --model M.onnx --batches FILE [--threads N] [--hold | --out PREFIX]');
	a.threads = parseInt(a.threads, 10);
	if (!(a.threads >= 1))
		fail('--threads must be a positive integer');
	return a;
}

function readBatches(path) {
	const buf = fs.readFileSync(path);
	const nl = buf.indexOf(10);
	if (nl < 0)
		fail(path + ': no header line');
	const head = JSON.parse(buf.subarray(0, nl).toString());
	const out = [];
	let off = nl + 1;
	for (const [B, S] of head.batches) {
		const n = B * S, t = {};
		for (const name of ['input_ids', 'token_type_ids', 'attention_mask']) {
			if (off + 8 * n > buf.length)
				fail(path + ': shorter than its header says');
			const a = new BigInt64Array(n);
			for (let i = 0; i < n; i++)
				a[i] = buf.readBigInt64LE(off + 8 * i);
			off += 8 * n;
			t[name] = new ort.Tensor('int64', a, [B, S]);
		}
		out.push({ B, S, feeds: t });
	}
	return out;
}

async function lineOfStdin() {
	return new Promise((resolve) => {
		let got = '';
		const onData = (d) => {
			got += d.toString();
			if (got.includes('\n')) {
				process.stdin.off('data', onData);
				process.stdin.pause();
				resolve(got);
			}
		};
		process.stdin.on('data', onData);
		process.stdin.resume();
	});
}

async function endOfStdin() {
	return new Promise((resolve) => {
		process.stdin.on('end', resolve);
		process.stdin.on('data', () => {});
		process.stdin.resume();
	});
}

async function main() {
	const a = parseArgs(process.argv.slice(2));
	const batches = readBatches(a.batches);
	if (!batches.length)
		fail(a.batches + ': no batches');
	const session = await ort.InferenceSession.create(a.model, {
		graphOptimizationLevel: 'all',
		intraOpNumThreads: a.threads,
		interOpNumThreads: 1,
		executionMode: 'sequential',
	});
	const feeds = (b) => {
		const f = {};
		for (const name of session.inputNames)
			f[name] = b.feeds[name];
		return f;
	};
	if (a.out) {
		const r = await session.run(feeds(batches[0]));
		for (const [name, key] of [['last_hidden_state', 'hidden'], ['pooler_output', 'pooled']]) {
			if (r[name])
				fs.writeFileSync(a.out + '.' + key + '.f32', Buffer.from(r[name].data.buffer,
					r[name].data.byteOffset, r[name].data.byteLength));
		}
		process.stdout.write(JSON.stringify({ dims: r.last_hidden_state.dims }) + '\n');
		return;
	}
	await session.run(feeds(batches[0]));	// warm-up: page in the weights, size the arena
	if (a.hold) {
		process.stdout.write('ready\n');
		await lineOfStdin();
	}
	const lat = [];
	let seqs = 0, tokens = 0;
	const c0 = process.cpuUsage(), t0 = process.hrtime.bigint();
	for (const b of batches) {
		const s0 = process.hrtime.bigint();
		await session.run(feeds(b));
		lat.push(Number(process.hrtime.bigint() - s0) / 1e9);
		seqs += b.B;
		tokens += b.B * b.S;
	}
	const wall = Number(process.hrtime.bigint() - t0) / 1e9;
	const cpu = process.cpuUsage(c0);
	process.stdout.write(JSON.stringify({
		engine: 'onnxruntime', tp: 1, threads: a.threads, pids: [process.pid],
		batches: batches.length, sequences: seqs, tokens, wall_s: wall,
		cpu_s: (cpu.user + cpu.system) / 1e6, latencies_s: lat,
	}) + '\n');
	if (a.hold)
		await endOfStdin();
}

main().catch((e) => fail(e.message));

/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
// _npccl_torch.cpp - a torch.distributed backend over libnpccl (PyTorch 1.13's
// c10d::ProcessGroup API), loaded and registered by npushm/ccl_torch.py.
//
// Each process group owns two npccl communicators bootstrapped through the
// Store torch passes (npccl_comm_init_kv): one for the collectives and one
// for send/recv, so point-to-point messages match independently of the
// collectives (as with gloo). Every operation is issued with npccl's
// non-blocking calls and returns a Work whose completion (an npccl request
// callback, on npccl's progress thread or in a waiting caller) copies
// results out of temporaries where needed, completes the Work and its
// c10::ivalue::Future (what DistributedDataParallel waits on). Work::wait()
// runs the communicator's queue in the calling thread when nobody else does.
// Futures complete on threads of their own (Completer), never on the thread
// that ran npccl's queue: a Future.then callback may issue a collective and
// wait for it (torch's PowerSGD hook does).
//
// Tensors: CPU, dense; non-contiguous tensors go through contiguous
// temporaries. Reductions need a dtype npccl reduces (int8, uint8, int32,
// int64, float16, bfloat16, float32, float64; bool for MIN/MAX/PRODUCT);
// data movement takes any dtype as bytes. Anything else throws, naming the
// operation and the reason.
#include <torch/extension.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <torch/csrc/utils/pybind.h>

#include <pybind11/chrono.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "npccl.h"

namespace {

using c10d::OpType;
using c10d::ReduceOp;
using Tensor = at::Tensor;

// One npccl communicator; destroyed (after its calls finished) when the last
// process group, work or shared tensor using it is gone.
struct Comm {
	npccl_comm_t comm = nullptr;
	~Comm()
	{
		npccl_comm_destroy(comm);
	}
};

[[noreturn]] void op_fail(const std::string &op, const std::string &why)
{
	throw std::runtime_error("npccl " + op + ": " + why);
}

std::string status_text(npccl_status_t st, const char *msg)
{
	std::string s = npccl_strerror(st);
	if (msg && *msg)
		s += std::string(": ") + msg;
	return s;
}

const char *reduce_op_name(ReduceOp::RedOpType op)
{
	switch (op) {
	case ReduceOp::SUM: return "SUM";
	case ReduceOp::AVG: return "AVG";
	case ReduceOp::PRODUCT: return "PRODUCT";
	case ReduceOp::MIN: return "MIN";
	case ReduceOp::MAX: return "MAX";
	case ReduceOp::BAND: return "BAND";
	case ReduceOp::BOR: return "BOR";
	case ReduceOp::BXOR: return "BXOR";
	case ReduceOp::PREMUL_SUM: return "PREMUL_SUM";
	default: return "?";
	}
}

npccl_redop_t to_redop(const std::string &op, const ReduceOp &r, at::ScalarType st)
{
	switch (r.op_) {
	case ReduceOp::SUM:
		if (st == at::kBool)
			op_fail(op, "ReduceOp.SUM on bool tensors is not supported (use MAX for a logical or)");
		return NPCCL_SUM;
	case ReduceOp::AVG:
		if (st == at::kBool)
			op_fail(op, "ReduceOp.AVG on bool tensors is not supported");
		return NPCCL_AVG;
	case ReduceOp::PRODUCT: return NPCCL_PROD;
	case ReduceOp::MIN: return NPCCL_MIN;
	case ReduceOp::MAX: return NPCCL_MAX;
	default:
		op_fail(op, std::string("ReduceOp.") + reduce_op_name(r.op_) +
				 " is not supported: npccl reduces with SUM, AVG, PRODUCT, MIN and MAX");
	}
}

npccl_dtype_t to_dtype(const std::string &op, at::ScalarType st)
{
	switch (st) {
	case at::kChar: return NPCCL_INT8;
	case at::kByte: return NPCCL_UINT8;
	case at::kBool: return NPCCL_UINT8;
	case at::kInt: return NPCCL_INT32;
	case at::kLong: return NPCCL_INT64;
	case at::kHalf: return NPCCL_FLOAT16;
	case at::kBFloat16: return NPCCL_BFLOAT16;
	case at::kFloat: return NPCCL_FLOAT32;
	case at::kDouble: return NPCCL_FLOAT64;
	default:
		op_fail(op, std::string("cannot reduce ") + c10::toString(st) +
				 " tensors: npccl reduces int8, uint8, int32, int64, float16, "
				 "bfloat16, float32, float64 (and bool with MIN/MAX/PRODUCT)");
	}
}

void check_tensor(const std::string &op, const Tensor &t)
{
	if (!t.defined())
		op_fail(op, "undefined tensor");
	if (!t.device().is_cpu())
		op_fail(op, "tensor on " + t.device().str() + ": npccl moves CPU tensors only");
	if (t.layout() != at::kStrided)
		op_fail(op, "sparse or non-strided tensors are not supported");
}

void check_single(const std::string &op, const std::vector<Tensor> &ts)
{
	if (ts.size() != 1)
		op_fail(op, "expects exactly one tensor per process (got " + std::to_string(ts.size()) +
				 "): one CPU device per rank");
	check_tensor(op, ts[0]);
}

// A contiguous tensor holding t's data (t itself when it already is).
Tensor contig(const Tensor &t)
{
	return t.is_contiguous() ? t : t.contiguous();
}

size_t nbytes(const Tensor &t)
{
	return (size_t)t.numel() * t.element_size();
}

// Temporaries (gathered blocks, concatenated inputs) reused across calls: a
// fresh large buffer costs a page fault per 4 KiB page on first touch, and
// large allocations go back to the system when freed, so a new one per call
// would be dominated by page faults. Bounded: 16 buffers, 1 GiB.
class ScratchPool {
public:
	// A uint8 tensor of at least `bytes` bytes (smallest that fits).
	Tensor get(size_t bytes)
	{
		bytes = std::max<size_t>(bytes, 64);
		{
			std::lock_guard<std::mutex> g(m_);
			int best = -1;
			for (size_t i = 0; i < free_.size(); i++)
				if ((size_t)free_[i].numel() >= bytes &&
				    (best < 0 || free_[i].numel() < free_[best].numel()))
					best = (int)i;
			if (best >= 0) {
				Tensor t = free_[best];
				held_ -= (size_t)t.numel();
				free_.erase(free_.begin() + best);
				return t;
			}
		}
		return at::empty({ (int64_t)bytes }, at::TensorOptions().dtype(at::kByte));
	}

	void put(const Tensor &t)
	{
		std::lock_guard<std::mutex> g(m_);
		if (free_.size() < 16 && held_ + (size_t)t.numel() <= (1ull << 30)) {
			free_.push_back(t);
			held_ += (size_t)t.numel();
		}
	}

private:
	std::mutex m_;
	std::vector<Tensor> free_;
	size_t held_ = 0;
};

// `numel` elements of type `st` at the start of a pooled uint8 buffer.
Tensor typed(const Tensor &raw, int64_t numel, at::ScalarType st)
{
	int64_t bytes = numel * (int64_t)c10::elementSize(st);
	Tensor b = raw.narrow(0, 0, std::max<int64_t>(bytes, 0));
	return numel ? b.view(st) : at::empty({ 0 }, at::TensorOptions().dtype(st));
}

// Runs future completions (and so their then-callbacks) off npccl's
// threads. A callback that blocks (waiting for a later collective, whose
// future is completed here too) holds up only its own thread: whenever more
// completions are queued than threads are idle, another thread starts. Idle
// threads end after 10 s. Never destroyed (threads may outlive statics).
class Completer {
public:
	static Completer &get()
	{
		static Completer *c = new Completer();
		return *c;
	}

	void post(std::function<void()> fn)
	{
		std::lock_guard<std::mutex> g(m_);
		q_.push_back(std::move(fn));
		if (q_.size() > idle_) {
			try {
				std::thread(&Completer::run, this).detach();
				return;
			} catch (const std::system_error &) {
				if (!idle_ && !running_) {
					// no thread at all: complete here rather than never
					auto f = std::move(q_.front());
					q_.pop_front();
					f();
					return;
				}
			}
		}
		cv_.notify_one();
	}

private:
	void run()
	{
		std::unique_lock<std::mutex> lock(m_);
		running_++;
		for (;;) {
			if (q_.empty()) {
				idle_++;
				bool got = cv_.wait_for(lock, std::chrono::seconds(10),
							[&] { return !q_.empty(); });
				idle_--;
				if (!got)
					break;
			}
			auto fn = std::move(q_.front());
			q_.pop_front();
			lock.unlock();
			fn();
			lock.lock();
		}
		running_--;
	}

	std::mutex m_;
	std::condition_variable cv_;
	std::deque<std::function<void()>> q_;
	size_t idle_ = 0, running_ = 0;
};

class NpcclWork : public c10d::Work {
public:
	NpcclWork(OpType type, std::shared_ptr<Comm> comm, std::string name,
		  std::vector<Tensor> outputs)
		: c10d::Work(-1, type), comm_(std::move(comm)), name_(std::move(name)),
		  outputs_(std::move(outputs)),
		  future_(c10::make_intrusive<c10::ivalue::Future>(
			  c10::ListType::create(c10::TensorType::get())))
	{
	}

	~NpcclWork() override
	{
		for (auto r : reqs_)
			npccl_request_free(r);
	}

	// Keeps t alive until completion (inputs and temporaries).
	void keep(const Tensor &t)
	{
		keep_.push_back(t);
	}

	// A pooled temporary of `numel` elements of type st, returned to the pool
	// at completion.
	Tensor scratch(const std::shared_ptr<ScratchPool> &pool, int64_t numel, at::ScalarType st)
	{
		Tensor raw = pool->get((size_t)numel * c10::elementSize(st));
		pool_ = pool;
		pooled_.push_back(raw);
		return typed(raw, numel, st);
	}

	// The concatenation of ts (flattened) in a pooled temporary.
	Tensor scratch_cat(const std::shared_ptr<ScratchPool> &pool, const std::vector<Tensor> &ts,
			   at::ScalarType st)
	{
		int64_t n = 0;
		for (auto &t : ts)
			n += t.numel();
		Tensor flat = scratch(pool, n, st);
		int64_t off = 0;
		for (auto &t : ts) {
			flat.narrow(0, off, t.numel()).view(t.sizes()).copy_(t);
			off += t.numel();
		}
		return flat;
	}

	// Runs at completion (on success) before the Work completes: copy-outs.
	void on_success(std::function<void()> fn)
	{
		finalize_.push_back(std::move(fn));
	}

	void add(npccl_request_t r)
	{
		reqs_.push_back(r);
	}

	// Called once all requests are posted: arms the callbacks. The Work holds
	// a reference to itself until the last callback ran.
	void arm()
	{
		if (reqs_.empty()) {
			complete(NPCCL_OK, "");
			return;
		}
		pending_.store((int)reqs_.size());
		c10::raw::intrusive_ptr::incref(this);
		for (auto r : reqs_)
			npccl_request_set_callback(r, &NpcclWork::done_cb, this);
	}

	bool wait(std::chrono::milliseconds timeout) override
	{
		auto start = std::chrono::steady_clock::now();
		for (auto r : reqs_) {
			int ms = -1;
			if (timeout != kNoTimeout) {
				auto spent = std::chrono::duration_cast<std::chrono::milliseconds>(
					std::chrono::steady_clock::now() - start);
				ms = (int)std::max<int64_t>(1, (timeout - spent).count());
			}
			npccl_status_t st = npccl_request_wait(r, ms);
			if (st == NPCCL_IN_PROGRESS)
				op_fail(name_, "did not complete within " + std::to_string(timeout.count()) +
						    " ms (Work.wait timeout; the operation goes on)");
		}
		// the last callback completed the Work before its request was marked done
		std::unique_lock<std::mutex> lock(mutex_);
		cv_.wait(lock, [&] { return completed_; });
		if (exception_)
			std::rethrow_exception(exception_);
		return true;
	}

	c10::intrusive_ptr<c10::ivalue::Future> getFuture() override
	{
		return future_;
	}

	std::vector<Tensor> result() override
	{
		return outputs_;
	}

private:
	static void done_cb(npccl_request_t r, npccl_status_t st, void *user)
	{
		auto *w = static_cast<NpcclWork *>(user);
		if (st != NPCCL_OK) {
			std::lock_guard<std::mutex> g(w->err_lock_);
			if (w->first_err_.empty())
				w->first_err_ = status_text(st, npccl_request_error(r));
		}
		if (w->pending_.fetch_sub(1) != 1)
			return;
		std::string err;
		{
			std::lock_guard<std::mutex> g(w->err_lock_);
			err = w->first_err_;
		}
		w->complete(err.empty() ? NPCCL_OK : NPCCL_ERR_ABORTED, err);
		c10::raw::intrusive_ptr::decref(w);
	}

	void complete(npccl_status_t st, const std::string &err)
	{
		std::exception_ptr ex;
		if (st == NPCCL_OK) {
			try {
				for (auto &f : finalize_)
					f();
			} catch (const std::exception &e) {
				ex = std::make_exception_ptr(
					std::runtime_error("npccl " + name_ + ": " + e.what()));
			}
		} else {
			ex = std::make_exception_ptr(std::runtime_error("npccl " + name_ + ": " + err));
		}
		finalize_.clear();
		keep_.clear();
		if (pool_)
			for (auto &t : pooled_)
				pool_->put(t);
		pooled_.clear();
		finish(ex);
		auto fut = future_;
		std::vector<Tensor> outs = outputs_;
		Completer::get().post([fut, outs, ex]() {
			if (ex)
				fut->setError(ex);
			else
				fut->markCompleted(c10::IValue(outs));
		});
	}

	std::shared_ptr<Comm> comm_;
	std::string name_;
	std::vector<Tensor> outputs_;
	std::vector<Tensor> keep_;
	std::shared_ptr<ScratchPool> pool_;
	std::vector<Tensor> pooled_;
	std::vector<std::function<void()>> finalize_;
	std::vector<npccl_request_t> reqs_;
	std::atomic<int> pending_{ 0 };
	std::mutex err_lock_;
	std::string first_err_;
	c10::intrusive_ptr<c10::ivalue::Future> future_;
};

void check_post(const std::string &op, npccl_status_t st, npccl_comm_t comm)
{
	if (st != NPCCL_OK)
		op_fail(op, status_text(st, npccl_comm_last_error(comm)));
}

// key-value store adapter for npccl_comm_init_kv
struct KvCtx {
	c10::intrusive_ptr<c10d::Store> store;
};

int kv_set(void *user, const char *key, const void *val, size_t len)
{
	auto *kv = static_cast<KvCtx *>(user);
	try {
		const uint8_t *p = static_cast<const uint8_t *>(val);
		kv->store->set(key, std::vector<uint8_t>(p, p + len));
		return 0;
	} catch (...) {
		return -1;
	}
}

int kv_get(void *user, const char *key, void *val, size_t cap, size_t *len, int timeout_ms)
{
	auto *kv = static_cast<KvCtx *>(user);
	try {
		kv->store->wait({ key }, std::chrono::milliseconds(timeout_ms));
		std::vector<uint8_t> v = kv->store->get(key);
		*len = v.size();
		memcpy(val, v.data(), std::min(cap, v.size()));
		return 0;
	} catch (...) {
		return -1;
	}
}

class ProcessGroupNpccl : public c10d::ProcessGroup {
public:
	ProcessGroupNpccl(const c10::intrusive_ptr<c10d::Store> &store, int rank, int size,
			  std::chrono::milliseconds timeout)
		: c10d::ProcessGroup(rank, size), timeout_(timeout)
	{
		KvCtx ctx{ store };
		npccl_kv_store_t kv = { kv_set, kv_get, &ctx };
		int tmo = (int)std::min<int64_t>(timeout.count(), INT32_MAX);
		coll_ = make_comm(kv, "coll/", tmo);
		p2p_ = make_comm(kv, "p2p/", tmo);
		init();
	}

	const std::string getBackendName() const override
	{
		return "npccl";
	}

	c10::intrusive_ptr<c10d::Work> allreduce(std::vector<Tensor> &tensors,
						 const c10d::AllreduceOptions &opts) override
	{
		const std::string op = "all_reduce";
		check_single(op, tensors);
		Tensor t = tensors[0];
		npccl_redop_t rop = to_redop(op, opts.reduceOp, t.scalar_type());
		npccl_dtype_t dt = to_dtype(op, t.scalar_type());
		auto w = work(OpType::ALLREDUCE, coll_, op, { t });
		Tensor c = contig(t);
		w->keep(c);
		if (!c.is_same(t))
			w->on_success([t, c]() mutable { t.copy_(c); });
		npccl_request_t r;
		check_post(op, npccl_allreduce_async(c.data_ptr(), c.data_ptr(), (size_t)c.numel(), dt,
						     rop, coll_->comm, &r), coll_->comm);
		return post(w, r);
	}

	c10::intrusive_ptr<c10d::Work> allreduce_coalesced(std::vector<Tensor> &tensors,
							   const c10d::AllreduceCoalescedOptions &opts) override
	{
		const std::string op = "all_reduce_coalesced";
		if (tensors.empty())
			op_fail(op, "no tensors");
		for (auto &t : tensors) {
			check_tensor(op, t);
			if (t.scalar_type() != tensors[0].scalar_type())
				op_fail(op, "all tensors must have the same dtype");
		}
		npccl_redop_t rop = to_redop(op, opts.reduceOp, tensors[0].scalar_type());
		npccl_dtype_t dt = to_dtype(op, tensors[0].scalar_type());
		auto w = work(OpType::ALLREDUCE_COALESCED, coll_, op, tensors);
		Tensor buf = w->scratch_cat(pool_, tensors, tensors[0].scalar_type());
		std::vector<Tensor> outs = tensors;
		w->on_success([outs, buf]() mutable {
			int64_t off = 0;
			for (auto &t : outs) {
				t.copy_(buf.narrow(0, off, t.numel()).view(t.sizes()));
				off += t.numel();
			}
		});
		npccl_request_t r;
		check_post(op, npccl_allreduce_async(buf.data_ptr(), buf.data_ptr(), (size_t)buf.numel(),
						     dt, rop, coll_->comm, &r), coll_->comm);
		return post(w, r);
	}

	c10::intrusive_ptr<c10d::Work> broadcast(std::vector<Tensor> &tensors,
						 const c10d::BroadcastOptions &opts) override
	{
		const std::string op = "broadcast";
		check_single(op, tensors);
		check_root(op, opts.rootRank);
		Tensor t = tensors[0];
		auto w = work(OpType::BROADCAST, coll_, op, { t });
		Tensor c = contig(t);
		w->keep(c);
		if (!c.is_same(t))
			w->on_success([t, c]() mutable { t.copy_(c); });
		npccl_request_t r;
		check_post(op, npccl_broadcast_async(c.data_ptr(), c.data_ptr(), nbytes(c), NPCCL_UINT8,
						     (int)opts.rootRank, coll_->comm, &r), coll_->comm);
		return post(w, r);
	}

	c10::intrusive_ptr<c10d::Work> reduce(std::vector<Tensor> &tensors,
					      const c10d::ReduceOptions &opts) override
	{
		const std::string op = "reduce";
		check_single(op, tensors);
		check_root(op, opts.rootRank);
		Tensor t = tensors[0];
		npccl_redop_t rop = to_redop(op, opts.reduceOp, t.scalar_type());
		npccl_dtype_t dt = to_dtype(op, t.scalar_type());
		bool root = opts.rootRank == rank_;
		auto w = work(OpType::REDUCE, coll_, op, { t });
		Tensor c = contig(t);
		w->keep(c);
		if (root && !c.is_same(t))
			w->on_success([t, c]() mutable { t.copy_(c); });
		npccl_request_t r;
		check_post(op, npccl_reduce_async(c.data_ptr(), root ? c.data_ptr() : nullptr,
						  (size_t)c.numel(), dt, rop, (int)opts.rootRank,
						  coll_->comm, &r), coll_->comm);
		return post(w, r);
	}

	c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<Tensor>> &outputs,
						 std::vector<Tensor> &inputs,
						 const c10d::AllgatherOptions &opts) override
	{
		const std::string op = "all_gather";
		check_single(op, inputs);
		if (outputs.size() != 1 || (int)outputs[0].size() != size_)
			op_fail(op, "expects one list of " + std::to_string(size_) + " output tensors");
		Tensor in = inputs[0];
		for (auto &o : outputs[0]) {
			check_tensor(op, o);
			if (o.numel() != in.numel() || o.scalar_type() != in.scalar_type())
				op_fail(op, "every output tensor must have the input's size and dtype (input " +
						 std::to_string(in.numel()) + " " + c10::toString(in.scalar_type()) +
						 ", output " + std::to_string(o.numel()) + " " +
						 c10::toString(o.scalar_type()) + ")");
		}
		auto w = work(OpType::ALLGATHER, coll_, op, outputs[0]);
		Tensor ci = contig(in);
		Tensor flat = w->scratch(pool_, (int64_t)size_ * in.numel(), in.scalar_type());
		w->keep(ci);
		std::vector<Tensor> outs = outputs[0];
		int64_t n = in.numel();
		w->on_success([outs, flat, n]() mutable {
			for (size_t i = 0; i < outs.size(); i++)
				outs[i].copy_(flat.narrow(0, (int64_t)i * n, n).view(outs[i].sizes()));
		});
		npccl_request_t r;
		check_post(op, npccl_allgather_async(ci.data_ptr(), flat.data_ptr(), nbytes(ci),
						     NPCCL_UINT8, coll_->comm, &r), coll_->comm);
		return post(w, r);
	}

	c10::intrusive_ptr<c10d::Work> _allgather_base(Tensor &output, Tensor &input,
						       const c10d::AllgatherOptions &opts) override
	{
		const std::string op = "all_gather_into_tensor";
		check_tensor(op, output);
		check_tensor(op, input);
		if (output.numel() != input.numel() * size_ || output.scalar_type() != input.scalar_type())
			op_fail(op, "the output must hold world_size (" + std::to_string(size_) +
					 ") times the input's elements, same dtype");
		auto w = work(OpType::_ALLGATHER_BASE, coll_, op, { output });
		Tensor ci = contig(input), co = contig(output);
		w->keep(ci);
		w->keep(co);
		if (!co.is_same(output))
			w->on_success([output, co]() mutable { output.copy_(co); });
		npccl_request_t r;
		check_post(op, npccl_allgather_async(ci.data_ptr(), co.data_ptr(), nbytes(ci),
						     NPCCL_UINT8, coll_->comm, &r), coll_->comm);
		return post(w, r);
	}

	c10::intrusive_ptr<c10d::Work> allgather_coalesced(std::vector<std::vector<Tensor>> &,
							   std::vector<Tensor> &,
							   const c10d::AllgatherOptions &) override
	{
		op_fail("all_gather_coalesced", "not supported (deprecated in torch): use all_gather or "
					     "all_gather_into_tensor");
	}

	c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<Tensor>> &outputs,
					      std::vector<Tensor> &inputs,
					      const c10d::GatherOptions &opts) override
	{
		const std::string op = "gather";
		check_single(op, inputs);
		check_root(op, opts.rootRank);
		Tensor in = inputs[0];
		bool root = opts.rootRank == rank_;
		std::vector<Tensor> outs;
		if (root) {
			if (outputs.size() != 1 || (int)outputs[0].size() != size_)
				op_fail(op, "the root expects one list of " + std::to_string(size_) +
						 " output tensors");
			outs = outputs[0];
			for (auto &o : outs) {
				check_tensor(op, o);
				if (o.numel() != in.numel() || o.scalar_type() != in.scalar_type())
					op_fail(op, "every output tensor must have the input's size and dtype");
			}
		} else if (!outputs.empty() && !outputs[0].empty()) {
			op_fail(op, "only the root (rank " + std::to_string(opts.rootRank) +
					 ") passes output tensors");
		}
		auto w = work(OpType::GATHER, coll_, op, outs);
		Tensor ci = contig(in);
		w->keep(ci);
		Tensor flat;
		if (root) {
			flat = w->scratch(pool_, (int64_t)size_ * in.numel(), in.scalar_type());
			int64_t n = in.numel();
			w->on_success([outs, flat, n]() mutable {
				for (size_t i = 0; i < outs.size(); i++)
					outs[i].copy_(flat.narrow(0, (int64_t)i * n, n).view(outs[i].sizes()));
			});
		}
		npccl_request_t r;
		check_post(op, npccl_gather_async(ci.data_ptr(), root ? flat.data_ptr() : nullptr,
						  nbytes(ci), NPCCL_UINT8, (int)opts.rootRank,
						  coll_->comm, &r), coll_->comm);
		return post(w, r);
	}

	c10::intrusive_ptr<c10d::Work> scatter(std::vector<Tensor> &outputs,
					       std::vector<std::vector<Tensor>> &inputs,
					       const c10d::ScatterOptions &opts) override
	{
		const std::string op = "scatter";
		check_single(op, outputs);
		check_root(op, opts.rootRank);
		Tensor out = outputs[0];
		bool root = opts.rootRank == rank_;
		auto w = work(OpType::SCATTER, coll_, op, { out });
		Tensor flat;
		if (root) {
			if (inputs.size() != 1 || (int)inputs[0].size() != size_)
				op_fail(op, "the root expects one list of " + std::to_string(size_) +
						 " input tensors");
			for (auto &i : inputs[0]) {
				check_tensor(op, i);
				if (i.numel() != out.numel() || i.scalar_type() != out.scalar_type())
					op_fail(op, "every input tensor must have the output's size and dtype");
			}
			flat = w->scratch_cat(pool_, inputs[0], out.scalar_type());
		} else if (!inputs.empty() && !inputs[0].empty()) {
			op_fail(op, "only the source (rank " + std::to_string(opts.rootRank) +
					 ") passes input tensors");
		}
		Tensor co = contig(out);
		w->keep(co);
		if (!co.is_same(out))
			w->on_success([out, co]() mutable { out.copy_(co); });
		npccl_request_t r;
		check_post(op, npccl_scatter_async(root ? flat.data_ptr() : nullptr, co.data_ptr(),
						   nbytes(co), NPCCL_UINT8, (int)opts.rootRank,
						   coll_->comm, &r), coll_->comm);
		return post(w, r);
	}

	c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<Tensor> &outputs,
						      std::vector<std::vector<Tensor>> &inputs,
						      const c10d::ReduceScatterOptions &opts) override
	{
		const std::string op = "reduce_scatter";
		check_single(op, outputs);
		Tensor out = outputs[0];
		if (inputs.size() != 1 || (int)inputs[0].size() != size_)
			op_fail(op, "expects one list of " + std::to_string(size_) + " input tensors");
		npccl_redop_t rop = to_redop(op, opts.reduceOp, out.scalar_type());
		npccl_dtype_t dt = to_dtype(op, out.scalar_type());
		for (auto &i : inputs[0]) {
			check_tensor(op, i);
			if (i.numel() != out.numel() || i.scalar_type() != out.scalar_type())
				op_fail(op, "every input tensor must have the output's size and dtype");
		}
		auto w = work(OpType::REDUCE_SCATTER, coll_, op, { out });
		Tensor flat = w->scratch_cat(pool_, inputs[0], out.scalar_type());
		return reduce_scatter_flat(w, op, out, flat, rop, dt);
	}

	c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(Tensor &output, Tensor &input,
							    const c10d::ReduceScatterOptions &opts) override
	{
		const std::string op = "reduce_scatter_tensor";
		check_tensor(op, output);
		check_tensor(op, input);
		if (input.numel() != output.numel() * size_ || output.scalar_type() != input.scalar_type())
			op_fail(op, "the input must hold world_size (" + std::to_string(size_) +
					 ") times the output's elements, same dtype");
		npccl_redop_t rop = to_redop(op, opts.reduceOp, output.scalar_type());
		npccl_dtype_t dt = to_dtype(op, output.scalar_type());
		auto w = work(OpType::_REDUCE_SCATTER_BASE, coll_, op, { output });
		return reduce_scatter_flat(w, op, output, contig(input), rop, dt);
	}

	c10::intrusive_ptr<c10d::Work> alltoall_base(Tensor &output, Tensor &input,
						     std::vector<int64_t> &outSplits,
						     std::vector<int64_t> &inSplits,
						     const c10d::AllToAllOptions &opts) override
	{
		const std::string op = "all_to_all_single";
		check_tensor(op, output);
		check_tensor(op, input);
		if (output.scalar_type() != input.scalar_type())
			op_fail(op, "input and output must have the same dtype");
		int64_t rows_in = input.dim() ? input.size(0) : 1, rows_out = output.dim() ? output.size(0) : 1;
		size_t rin = rows_in ? nbytes(input) / (size_t)rows_in : 0;
		size_t rout = rows_out ? nbytes(output) / (size_t)rows_out : 0;
		auto w = work(OpType::ALLTOALL_BASE, coll_, op, { output });
		Tensor ci = contig(input), co = contig(output);
		w->keep(ci);
		w->keep(co);
		if (!co.is_same(output))
			w->on_success([output, co]() mutable { output.copy_(co); });
		if (outSplits.empty() && inSplits.empty()) {
			if (rows_in % size_ || nbytes(input) != nbytes(output))
				op_fail(op, "without split sizes, dim 0 of input and output must divide by "
					 "world_size and both tensors have the same size");
			npccl_request_t r;
			check_post(op, npccl_alltoall_async(ci.data_ptr(), co.data_ptr(),
							    nbytes(ci) / (size_t)size_, NPCCL_UINT8,
							    coll_->comm, &r), coll_->comm);
			return post(w, r);
		}
		std::vector<int64_t> is = inSplits, os = outSplits;
		if (is.empty())
			is.assign(size_, rows_in / size_);
		if (os.empty())
			os.assign(size_, rows_out / size_);
		if ((int)is.size() != size_ || (int)os.size() != size_)
			op_fail(op, "split sizes must have world_size entries");
		int64_t si = 0, so = 0;
		for (int j = 0; j < size_; j++) {
			if (is[j] < 0 || os[j] < 0)
				op_fail(op, "negative split size");
			si += is[j];
			so += os[j];
		}
		if (si != rows_in || so != rows_out)
			op_fail(op, "split sizes must add up to dim 0 of input and output");
		if (rin != rout && rows_in && rows_out)
			op_fail(op, "input and output rows must have the same size");
		std::vector<std::pair<size_t, size_t>> sblk, rblk;
		size_t off = 0;
		for (int j = 0; j < size_; j++) {
			sblk.push_back({ off * rin, (size_t)is[j] * rin });
			off += (size_t)is[j];
		}
		off = 0;
		for (int j = 0; j < size_; j++) {
			rblk.push_back({ off * rout, (size_t)os[j] * rout });
			off += (size_t)os[j];
		}
		return exchange(op, w, (char *)ci.data_ptr(), sblk, (char *)co.data_ptr(), rblk);
	}

	c10::intrusive_ptr<c10d::Work> alltoall(std::vector<Tensor> &outputs,
						std::vector<Tensor> &inputs,
						const c10d::AllToAllOptions &opts) override
	{
		const std::string op = "all_to_all";
		if ((int)outputs.size() != size_ || (int)inputs.size() != size_)
			op_fail(op, "expects world_size (" + std::to_string(size_) +
					 ") input and output tensors");
		at::ScalarType st = inputs[0].scalar_type();
		for (int j = 0; j < size_; j++) {
			check_tensor(op, inputs[j]);
			check_tensor(op, outputs[j]);
			if (inputs[j].scalar_type() != st || outputs[j].scalar_type() != st)
				op_fail(op, "all tensors must have the same dtype");
		}
		auto w = work(OpType::ALLTOALL, coll_, op, outputs);
		int64_t rn = 0;
		for (int j = 0; j < size_; j++)
			rn += outputs[j].numel();
		Tensor sflat = w->scratch_cat(pool_, inputs, st);
		Tensor rflat = w->scratch(pool_, rn, st);
		std::vector<std::pair<size_t, size_t>> sblk, rblk;
		size_t so = 0, ro = 0;
		for (int j = 0; j < size_; j++) {
			sblk.push_back({ so, nbytes(inputs[j]) });
			so += nbytes(inputs[j]);
			rblk.push_back({ ro, nbytes(outputs[j]) });
			ro += nbytes(outputs[j]);
		}
		std::vector<Tensor> outs = outputs;
		w->on_success([outs, rflat]() mutable {
			int64_t off = 0;
			for (auto &t : outs) {
				t.copy_(rflat.narrow(0, off, t.numel()).view(t.sizes()));
				off += t.numel();
			}
		});
		return exchange(op, w, (char *)sflat.data_ptr(), sblk, (char *)rflat.data_ptr(), rblk);
	}

	c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions &opts) override
	{
		auto w = work(OpType::BARRIER, coll_, "barrier", {});
		npccl_request_t r;
		check_post("barrier", npccl_barrier_async(coll_->comm, &r), coll_->comm);
		return post(w, r);
	}

	c10::intrusive_ptr<c10d::Work> send(std::vector<Tensor> &tensors, int dst, int tag) override
	{
		const std::string op = "send";
		check_single(op, tensors);
		check_peer(op, dst, tag);
		Tensor c = contig(tensors[0]);
		auto w = work(OpType::SEND, p2p_, op, {});
		w->keep(c);
		npccl_request_t r;
		check_post(op, npccl_send_async(c.data_ptr(), nbytes(c), NPCCL_UINT8, dst, p2p_->comm,
						&r), p2p_->comm);
		return post(w, r);
	}

	c10::intrusive_ptr<c10d::Work> recv(std::vector<Tensor> &tensors, int src, int tag) override
	{
		const std::string op = "recv";
		check_single(op, tensors);
		check_peer(op, src, tag);
		Tensor t = tensors[0];
		Tensor c = contig(t);
		auto w = work(OpType::RECV, p2p_, op, { t });
		w->keep(c);
		if (!c.is_same(t))
			w->on_success([t, c]() mutable { t.copy_(c); });
		npccl_request_t r;
		check_post(op, npccl_recv_async(c.data_ptr(), nbytes(c), NPCCL_UINT8, src, p2p_->comm,
						&r), p2p_->comm);
		return post(w, r);
	}

	c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<Tensor> &, int) override
	{
		op_fail("recv", "receiving from any source is not supported: npccl matches messages "
			     "between two given ranks (pass src)");
	}

	// `bytes` of npccl shared memory as a uint8 tensor (npccl_mem_alloc:
	// collective; AllReduce on such tensors is zero-copy on one host). Kept
	// until the process group is destroyed (frees must be collective and in
	// call order, which garbage collection is not).
	Tensor alloc_shared(int64_t bytes)
	{
		if (bytes <= 0)
			op_fail("alloc_shared", "the size must be > 0 bytes");
		void *p = nullptr;
		npccl_status_t s = npccl_mem_alloc(coll_->comm, (size_t)bytes, &p);
		if (s != NPCCL_OK)
			op_fail("alloc_shared", status_text(s, npccl_comm_last_error(coll_->comm)));
		std::shared_ptr<Comm> keep = coll_;
		return torch::from_blob(p, { bytes }, [keep](void *) {},
					at::TensorOptions().dtype(at::kByte).device(at::kCPU));
	}

	// npccl_comm_set_deterministic on the collectives' communicator (every
	// rank of the group, same value, between calls).
	void set_deterministic(bool on)
	{
		npccl_status_t s = npccl_comm_set_deterministic(coll_->comm, on ? 1 : 0);
		if (s != NPCCL_OK)
			op_fail("set_deterministic", status_text(s, npccl_comm_last_error(coll_->comm)));
	}

	std::string describe() const
	{
		npccl_explanation_t ex;
		npccl_explain(coll_->comm, NPCCL_COLL_ALLREDUCE, 1 << 20, NPCCL_FLOAT32, &ex);
		int nh = 0, h = 0;
		npccl_comm_hosts(coll_->comm, &nh, &h);
		return "npccl rank " + std::to_string(rank_) + "/" + std::to_string(size_) + ", " +
		       std::to_string(nh) + " host(s); " + ex.text;
	}

private:
	std::shared_ptr<Comm> make_comm(npccl_kv_store_t &kv, const char *prefix, int tmo)
	{
		auto c = std::make_shared<Comm>();
		char err[700] = "";
		npccl_status_t st = npccl_comm_init_kv(&c->comm, size_, rank_, &kv, prefix, 0, err,
						       sizeof(err));
		if (st != NPCCL_OK)
			op_fail("init_process_group", status_text(st, err));
		npccl_comm_set_timeout(c->comm, tmo > 0 ? tmo : 1800000);
		return c;
	}

	void check_root(const std::string &op, int64_t root)
	{
		if (root < 0 || root >= size_)
			op_fail(op, "root rank " + std::to_string(root) + " is outside 0.." +
					 std::to_string(size_ - 1));
	}

	void check_peer(const std::string &op, int peer, int tag)
	{
		if (peer < 0 || peer >= size_ || peer == rank_)
			op_fail(op, "peer rank " + std::to_string(peer) +
					 " is not another rank of this group (0.." +
					 std::to_string(size_ - 1) + ", self " + std::to_string(rank_) + ")");
		if (tag != 0)
			op_fail(op, "tag " + std::to_string(tag) + " is not supported: npccl matches the "
							       "messages between two ranks in call order (use tag 0)");
	}

	c10::intrusive_ptr<NpcclWork> work(OpType type, const std::shared_ptr<Comm> &comm,
					  const std::string &name, std::vector<Tensor> outputs)
	{
		return c10::make_intrusive<NpcclWork>(type, comm, name, std::move(outputs));
	}

	c10::intrusive_ptr<c10d::Work> post(const c10::intrusive_ptr<NpcclWork> &w, npccl_request_t r)
	{
		w->add(r);
		w->arm();
		return w;
	}

	c10::intrusive_ptr<c10d::Work> reduce_scatter_flat(c10::intrusive_ptr<NpcclWork> w,
							   const std::string &op, Tensor out, Tensor flat,
							   npccl_redop_t rop, npccl_dtype_t dt)
	{
		Tensor co = contig(out);
		w->keep(flat);
		w->keep(co);
		if (!co.is_same(out))
			w->on_success([out, co]() mutable { out.copy_(co); });
		npccl_request_t r;
		check_post(op, npccl_reduce_scatter_async(flat.data_ptr(), co.data_ptr(),
							  (size_t)co.numel(), dt, rop, coll_->comm, &r),
			   coll_->comm);
		return post(w, r);
	}

	// Uneven all-to-all: a send and a receive per peer (in rank order on every
	// rank), the own block copied.
	c10::intrusive_ptr<c10d::Work> exchange(const std::string &op, c10::intrusive_ptr<NpcclWork> w,
						char *sbuf,
						const std::vector<std::pair<size_t, size_t>> &sblk,
						char *rbuf,
						const std::vector<std::pair<size_t, size_t>> &rblk)
	{
		if (sblk[rank_].second != rblk[rank_].second)
			op_fail(op, "this rank sends itself " + std::to_string(sblk[rank_].second) +
					 " bytes but expects " + std::to_string(rblk[rank_].second));
		memcpy(rbuf + rblk[rank_].first, sbuf + sblk[rank_].first, sblk[rank_].second);
		for (int k = 1; k < size_; k++) {
			int to = (rank_ + k) % size_, from = (rank_ - k + size_) % size_;
			npccl_request_t r;
			check_post(op, npccl_recv_async(rbuf + rblk[from].first, rblk[from].second,
							NPCCL_UINT8, from, coll_->comm, &r), coll_->comm);
			w->add(r);
			check_post(op, npccl_send_async(sbuf + sblk[to].first, sblk[to].second,
							NPCCL_UINT8, to, coll_->comm, &r), coll_->comm);
			w->add(r);
		}
		w->arm();
		return w;
	}

	std::chrono::milliseconds timeout_;
	std::shared_ptr<Comm> coll_, p2p_;
	std::shared_ptr<ScratchPool> pool_ = std::make_shared<ScratchPool>();
};

} // namespace

PYBIND11_MODULE(_npccl_torch, m)
{
	m.doc() = "torch.distributed backend over libnpccl (see npushm.ccl_torch)";
	py::class_<ProcessGroupNpccl, c10d::ProcessGroup, c10::intrusive_ptr<ProcessGroupNpccl>>(
		m, "ProcessGroupNpccl")
		.def(py::init([](const c10::intrusive_ptr<c10d::Store> &store, int rank, int size,
				 std::chrono::milliseconds timeout) {
			     return c10::make_intrusive<ProcessGroupNpccl>(store, rank, size, timeout);
		     }),
		     py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("timeout"),
		     py::call_guard<py::gil_scoped_release>())
		.def("_alloc_shared", &ProcessGroupNpccl::alloc_shared, py::arg("bytes"),
		     py::call_guard<py::gil_scoped_release>())
		.def("_set_deterministic", &ProcessGroupNpccl::set_deterministic, py::arg("on"),
		     py::call_guard<py::gil_scoped_release>())
		.def("_describe", &ProcessGroupNpccl::describe);
}

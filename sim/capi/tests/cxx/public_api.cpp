// The canonical flow, the async flow and a system-trace capture from C++17, against nrtsim's
// libnrt.so.1 and the public header set: RAII owners for every handle, std::vector buffers.
//
// Usage: public_api MODEL.neff, where the model has input0 and output0, f32[4], and
// output0 = 2 * input0. Prints "c++ public api ok" and exits 0, or names the first failed check
// and exits 1.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include <nrt/nrt.h>
#include <nrt/nrt_async.h>
#include <nrt/nrt_experimental.h>
#include <nrt/nrt_profile.h>
#include <nrt/nrt_sys_trace.h>

static_assert(sizeof(nrt_tensor_info_t) == 296, "nrt_tensor_info_t is 296 bytes");
static_assert(sizeof(nrta_error_t) == 16, "nrta_error_t is 16 bytes");

namespace {

[[noreturn]] void fail(const std::string &what) {
    std::printf("check failed: %s\n", what.c_str());
    std::exit(1);
}

void expect(const char *what, NRT_STATUS got, NRT_STATUS want = NRT_SUCCESS) {
    if (got != want) {
        std::printf("%s returned %s (%d), expected %s (%d)\n", what, nrt_get_status_as_str(got),
                    static_cast<int>(got), nrt_get_status_as_str(want), static_cast<int>(want));
        std::exit(1);
    }
}

void ensure(bool ok, const char *what) {
    if (!ok) {
        fail(what);
    }
}

struct TensorDeleter {
    void operator()(nrt_tensor_t *tensor) const { nrt_tensor_free(&tensor); }
};
struct SetDeleter {
    void operator()(nrt_tensor_set_t *set) const { nrt_destroy_tensor_set(&set); }
};
struct TrackerDeleter {
    void operator()(nrta_error_tracker_t *tracker) const { nrta_error_tracker_destroy(tracker); }
};
struct ConfigDeleter {
    void operator()(nrt_sys_trace_config_t *config) const { nrt_sys_trace_config_free(config); }
};
struct InfoDeleter {
    void operator()(nrt_tensor_info_array_t *info) const { nrt_free_model_tensor_info(info); }
};

using Tensor = std::unique_ptr<nrt_tensor_t, TensorDeleter>;
using Set = std::unique_ptr<nrt_tensor_set_t, SetDeleter>;

Tensor allocate(const nrt_tensor_info_t &entry) {
    nrt_tensor_t *tensor = nullptr;
    expect("nrt_tensor_allocate",
           nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, entry.size, entry.name, &tensor));
    return Tensor(tensor);
}

Set new_set() {
    nrt_tensor_set_t *set = nullptr;
    expect("nrt_allocate_tensor_set", nrt_allocate_tensor_set(&set));
    return Set(set);
}

void wait_for(nrta_seq_t seq) {
    for (long spin = 0; spin < 200000000L; spin++) {
        bool done = false;
        expect("nrta_is_completed", nrta_is_completed(seq, &done));
        if (done) {
            return;
        }
    }
    fail("an async request completes");
}

}  // namespace

int main(int argc, char **argv) {
    ensure(argc == 2, "usage: public_api MODEL.neff");
    std::ifstream file(argv[1], std::ios::binary);
    std::vector<char> neff((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    ensure(!neff.empty(), "read the NEFF");

    expect("nrt_init", nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""));
    nrt_sys_trace_config_t *raw_config = nullptr;
    expect("nrt_sys_trace_config_allocate", nrt_sys_trace_config_allocate(&raw_config));
    std::unique_ptr<nrt_sys_trace_config_t, ConfigDeleter> config(raw_config);
    expect("nrt_sys_trace_start", nrt_sys_trace_start(config.get()));

    nrt_model_t *model = nullptr;
    expect("nrt_load", nrt_load(neff.data(), neff.size(), -1, -1, &model));
    nrt_tensor_info_array_t *raw_info = nullptr;
    expect("nrt_get_model_tensor_info", nrt_get_model_tensor_info(model, &raw_info));
    std::unique_ptr<nrt_tensor_info_array_t, InfoDeleter> info(raw_info);
    ensure(info->tensor_count == 2, "two tensors");

    // The canonical flow, one tensor per info entry.
    Set inputs = new_set(), outputs = new_set();
    std::vector<Tensor> tensors;
    for (uint64_t i = 0; i < info->tensor_count; i++) {
        const nrt_tensor_info_t &entry = info->tensor_array[i];
        tensors.push_back(allocate(entry));
        nrt_tensor_set_t *set = entry.usage == NRT_TENSOR_USAGE_INPUT ? inputs.get() : outputs.get();
        expect("nrt_add_tensor_to_tensor_set",
               nrt_add_tensor_to_tensor_set(set, entry.name, tensors.back().get()));
    }
    const std::vector<float> input{1.0f, -2.0f, 3.0f, 0.25f};
    expect("nrt_tensor_write", nrt_tensor_write(tensors[0].get(), input.data(), 0, 16));
    expect("nrt_execute", nrt_execute(model, inputs.get(), outputs.get()));
    std::vector<float> output(4);
    expect("nrt_tensor_read", nrt_tensor_read(tensors[1].get(), output.data(), 0, 16));
    for (size_t i = 0; i < 4; i++) {
        ensure(output[i] == 2.0f * input[i], "the output is the doubled input");
    }

    // The async flow on the same tensors.
    nrta_error_tracker_t *raw_tracker = nullptr;
    expect("nrta_error_tracker_create", nrta_error_tracker_create(0, &raw_tracker));
    std::unique_ptr<nrta_error_tracker_t, TrackerDeleter> tracker(raw_tracker);
    const std::vector<float> next{4.0f, 5.0f, 6.0f, 7.0f};
    std::vector<float> next_out(4, 0.0f);
    nrta_seq_t seq = 0;
    expect("nrta_tensor_write", nrta_tensor_write(tensors[0].get(), next.data(), 0, 16, 0,
                                                  tracker.get(), &seq));
    wait_for(seq);
    expect("nrta_execute_schedule",
           nrta_execute_schedule(model, inputs.get(), outputs.get(), 0, tracker.get(), &seq));
    wait_for(seq);
    expect("nrta_tensor_read", nrta_tensor_read(next_out.data(), tensors[1].get(), 0, 16, 0,
                                                tracker.get(), &seq));
    wait_for(seq);
    for (size_t i = 0; i < 4; i++) {
        ensure(next_out[i] == 2.0f * next[i], "the async output is the doubled input");
    }
    const nrta_error_t *errors = nullptr;
    size_t n_errors = 99;
    expect("nrta_error_tracker_get_list",
           nrta_error_tracker_get_list(tracker.get(), &errors, &n_errors));
    ensure(n_errors == 0, "no request failed");

    // The capture.
    char *json = nullptr;
    size_t size = 0;
    expect("nrt_sys_trace_fetch_events", nrt_sys_trace_fetch_events(&json, &size, nullptr));
    const std::string events(json, size);
    nrt_sys_trace_buffer_free(json);
    // A launch is a start and a stop record; count the starts, as spike pairs them.
    const std::string launch_start = "\"event_type\":\"nc_exec_running\",\"phase\":\"start\"";
    size_t launches = 0;
    for (size_t at = events.find(launch_start); at != std::string::npos;
         at = events.find(launch_start, at + 1)) {
        launches++;
    }
    ensure(launches == 2, "one nc_exec_running event per launch (sync and async)");
    expect("nrt_sys_trace_stop", nrt_sys_trace_stop());

    tensors.clear();
    expect("nrt_unload", nrt_unload(model));
    nrt_close();
    std::printf("c++ public api ok\n");
    return 0;
}

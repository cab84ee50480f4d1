// libtorchneuron's objects for torch programs, on nrtsim: torch.classes.neuron.Model and
// SPMDModel, torch.ops.neuron.forward_v2 and the loading ops public callers use. This layer only
// converts tensors and errors; every rule is the binding layer's, reached through nrtsim/bind.h
// (exported by the simulator's libnrt.so.1).

#include <torch/custom_class.h>
#include <torch/library.h>
#include <torch/script.h>

#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <nrtsim/bind.h>

namespace nrtsim_torch {

// The version of the pickled state of Model and SPMDModel (docs/torch.md).
constexpr const char *kModelState = "nrtsim-torch-model-1";
constexpr const char *kSpmdState = "nrtsim-torch-spmd-model-1";

[[noreturn]] void raise(int32_t status, const std::string &context) {
  std::string message = context + ": " + nrtsim_bind_last_error();
  switch (status) {
    case NRTSIM_BIND_INVALID_ARGUMENT:
      TORCH_CHECK_VALUE(false, message);
    case NRTSIM_BIND_UNSUPPORTED:
      TORCH_CHECK_NOT_IMPLEMENTED(false, message);
    default:
      TORCH_CHECK(false, message);
  }
}

void check(int32_t status, const std::string &context) {
  if (status != NRTSIM_BIND_OK) {
    raise(status, context);
  }
}

// The tensors of one call, kept contiguous and alive while C reads them (and writes the donated
// ones).
struct Inputs {
  std::vector<at::Tensor> tensors;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<nrtsim_bind_tensor_t> described;
  std::vector<size_t> counts;
  // Where each list starts in `tensors`.
  std::vector<size_t> offsets;

  void add_list(const std::vector<at::Tensor> &list, const std::string &what) {
    offsets.push_back(tensors.size());
    for (size_t i = 0; i < list.size(); ++i) {
      const at::Tensor &tensor = list[i];
      std::string name = what + " " + std::to_string(i);
      TORCH_CHECK(tensor.defined(), name, " is an undefined tensor, expected a tensor");
      TORCH_CHECK(tensor.device().is_cpu(), name, " is on ", tensor.device(),
                  ", expected a CPU tensor (nrtsim's device lives in host memory)");
      tensors.push_back(tensor.contiguous());
      shapes.emplace_back(tensor.sizes().begin(), tensor.sizes().end());
    }
    counts.push_back(list.size());
  }

  // Call after every add_list: the descriptions point into `tensors` and `shapes`.
  const nrtsim_bind_tensor_t *describe() {
    described.clear();
    described.reserve(tensors.size());
    for (size_t i = 0; i < tensors.size(); ++i) {
      const at::Tensor &tensor = tensors[i];
      nrtsim_bind_tensor_t d;
      d.scalar_type = static_cast<int32_t>(tensor.scalar_type());
      d.ndim = static_cast<int32_t>(shapes[i].size());
      d.shape = shapes[i].data();
      d.data = tensor.data_ptr();
      d.nbytes = tensor.nbytes();
      described.push_back(d);
    }
    return described.data();
  }
};

// The outputs forward_into asked for, by (rank, index), and the first failure inside the
// callback (which must not throw across the C API).
struct Made {
  std::map<std::pair<size_t, size_t>, at::Tensor> tensors;
  std::string error;
};

void *allocate_output(void *context, size_t rank, size_t index, int32_t scalar_type, int32_t ndim,
                      const int64_t *shape, size_t nbytes) noexcept {
  auto *made = static_cast<Made *>(context);
  try {
    auto dtype = static_cast<at::ScalarType>(scalar_type);
    at::Tensor out = at::empty(at::IntArrayRef(shape, static_cast<size_t>(ndim)),
                               at::TensorOptions().dtype(dtype));
    if (out.nbytes() != nbytes) {
      made->error = "output " + std::to_string(index) + " is " + std::to_string(out.nbytes()) +
                    " bytes as a torch tensor, expected " + std::to_string(nbytes);
      return nullptr;
    }
    made->tensors[{rank, index}] = out;
    return out.data_ptr();
  } catch (const std::exception &error) {
    made->error = error.what();
  } catch (...) {
    made->error = "an unknown exception";
  }
  return nullptr;
}

// The outputs of a forward_into, per rank: each output the tensor made for it, or, when donated,
// the caller's input itself, which the forward wrote in place (as libtorchneuron returns the
// donor's buffer). An input passed as a contiguous copy gets the value written into that copy.
std::vector<std::vector<at::Tensor>> collect(uint64_t result, const Made &made,
                                             const std::vector<std::vector<at::Tensor>> &given,
                                             const Inputs &passed) {
  size_t n_ranks = 0, n_outputs = 0;
  int32_t status = nrtsim_bind_result_size(result, &n_ranks, &n_outputs);
  std::vector<std::vector<at::Tensor>> outputs;
  for (size_t rank = 0; status == NRTSIM_BIND_OK && rank < n_ranks; ++rank) {
    // One list given to every rank, or one per rank.
    size_t list = given.size() == 1 ? 0 : rank;
    const auto &inputs = given[list];
    std::vector<at::Tensor> row;
    for (size_t index = 0; status == NRTSIM_BIND_OK && index < n_outputs; ++index) {
      nrtsim_bind_output_t output;
      status = nrtsim_bind_result_output(result, rank, index, &output);
      if (status != NRTSIM_BIND_OK) break;
      if (output.alias_input >= 0 && static_cast<size_t>(output.alias_input) < inputs.size()) {
        row.push_back(inputs[output.alias_input]);
        continue;
      }
      auto found = made.tensors.find({rank, index});
      if (found == made.tensors.end()) {
        nrtsim_bind_result_free(result);
        TORCH_CHECK(false, "output ", index, " of rank ", rank, " was never allocated");
      }
      row.push_back(found->second);
    }
    // Inputs the launch wrote: in place, unless the caller's tensor was not contiguous.
    size_t n_updated = 0;
    if (status == NRTSIM_BIND_OK) status = nrtsim_bind_result_updated_count(result, rank, &n_updated);
    for (size_t k = 0; status == NRTSIM_BIND_OK && k < n_updated; ++k) {
      size_t position = 0;
      status = nrtsim_bind_result_updated_position(result, rank, k, &position);
      if (status != NRTSIM_BIND_OK || position >= inputs.size()) continue;
      at::Tensor donor = inputs[position];
      const at::Tensor &written = passed.tensors[passed.offsets[list] + position];
      if (!written.is_same(donor)) donor.copy_(written);
    }
    outputs.push_back(std::move(row));
  }
  if (status != NRTSIM_BIND_OK) {
    std::string message = nrtsim_bind_last_error();
    nrtsim_bind_result_free(result);
    TORCH_CHECK(false, "reading the outputs: ", message);
  }
  nrtsim_bind_result_free(result);
  return outputs;
}

std::vector<std::vector<at::Tensor>> forward_lists(uint64_t model,
                                                   const std::vector<std::vector<at::Tensor>> &lists,
                                                   const std::string &what) {
  Inputs inputs;
  for (size_t r = 0; r < lists.size(); ++r) {
    inputs.add_list(lists[r], lists.size() == 1 ? "input" : "rank " + std::to_string(r) + " input");
  }
  const nrtsim_bind_tensor_t *described = inputs.describe();
  uint64_t result = 0;
  Made made;
  int32_t status = nrtsim_bind_forward_into(model, described, inputs.counts.data(),
                                            inputs.counts.size(), allocate_output, &made, &result);
  if (status != NRTSIM_BIND_OK && !made.error.empty()) {
    std::string message = nrtsim_bind_last_error();
    TORCH_CHECK(false, what, ": ", message, " (allocating it: ", made.error, ")");
  }
  check(status, what);
  return collect(result, made, lists, inputs);
}

std::string model_bytes(uint64_t model, int32_t which) {
  size_t size = 0;
  check(nrtsim_bind_model_bytes(model, which, nullptr, &size), "reading the model's bytes");
  std::string bytes(size, '\0');
  if (size > 0) {
    check(nrtsim_bind_model_bytes(model, which, bytes.data(), &size), "reading the model's bytes");
  }
  return bytes;
}

bool save_bytes(const std::string &bytes, const std::string &path) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) return false;
  file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return static_cast<bool>(file);
}

struct Model : torch::CustomClassHolder {
  uint64_t id = 0;

  Model(const std::string &neff, const std::string &metaneff) {
    check(nrtsim_bind_model_new(neff.data(), neff.size(), metaneff.data(), metaneff.size(), &id),
          "torch.classes.neuron.Model");
  }
  ~Model() override {
    if (id != 0) nrtsim_bind_model_free(id);
  }

  void load() { check(nrtsim_bind_model_action(id, NRTSIM_BIND_LOAD_ACTION), "Model.load"); }
  void blocking_load() {
    check(nrtsim_bind_model_action(id, NRTSIM_BIND_BLOCKING_LOAD_ACTION), "Model.blocking_load");
  }
  void unload() { check(nrtsim_bind_model_action(id, NRTSIM_BIND_UNLOAD_ACTION), "Model.unload"); }
  void load_collectives(int64_t vnc, int64_t vnc_count, int64_t device_id, int64_t device_count) {
    check(nrtsim_bind_model_load_collectives(id, vnc, vnc_count, device_id, device_count),
          "Model.load_collectives");
  }
  int64_t instance_count() {
    int64_t count = 0;
    check(nrtsim_bind_model_instance_count(id, &count), "Model.instance_count");
    return count;
  }
  void set_neuron_devices(int64_t start, int64_t count) {
    check(nrtsim_bind_model_set_neuron_devices(id, start, count), "Model.set_neuron_devices");
  }
  void set_flag(int32_t flag, bool value, const char *what) {
    check(nrtsim_bind_model_set_flag(id, flag, value ? 1 : 0), what);
  }
  void set_dynamic_batching_mixed(std::vector<int64_t> inputs, std::vector<int64_t> outputs) {
    check(nrtsim_bind_model_set_dynamic_batching_mixed(id, inputs.data(), inputs.size(),
                                                       outputs.data(), outputs.size()),
          "Model.set_dynamic_batching_mixed");
  }
  std::vector<at::Tensor> forward(const std::vector<at::Tensor> &inputs) {
    return forward_lists(id, {inputs}, "torch.ops.neuron.forward_v2")[0];
  }
};

struct SPMDModel : torch::CustomClassHolder {
  uint64_t id = 0;
  int64_t local_ranks = 0;
  int64_t world_size = 0;

  SPMDModel(const std::string &neff, const std::string &metaneff, int64_t local_ranks,
            int64_t world_size)
      : local_ranks(local_ranks), world_size(world_size) {
    check(nrtsim_bind_spmd_model_new(neff.data(), neff.size(), metaneff.data(), metaneff.size(),
                                     local_ranks, world_size, &id),
          "torch.classes.neuron.SPMDModel");
  }
  ~SPMDModel() override {
    if (id != 0) nrtsim_bind_model_free(id);
  }

  void initialize(const std::vector<c10::Dict<std::string, at::Tensor>> &states,
                  const std::vector<c10::Dict<std::string, at::Tensor>> &weights,
                  int64_t start_rank) {
    size_t n_ranks = std::max(states.size(), weights.size());
    std::vector<at::Tensor> keep;
    std::vector<std::string> names;
    std::vector<std::vector<int64_t>> shapes;
    std::vector<size_t> counts(n_ranks, 0);
    std::vector<size_t> owner;
    for (size_t rank = 0; rank < n_ranks; ++rank) {
      for (const auto *table : {&states, &weights}) {
        if (rank >= table->size()) continue;
        for (const auto &item : (*table)[rank]) {
          const at::Tensor &tensor = item.value();
          TORCH_CHECK(tensor.device().is_cpu(), "rank ", rank, " weight \"", item.key(),
                      "\" is on ", tensor.device(), ", expected a CPU tensor");
          keep.push_back(tensor.contiguous());
          names.push_back(item.key());
          shapes.emplace_back(tensor.sizes().begin(), tensor.sizes().end());
          counts[rank] += 1;
        }
      }
    }
    std::vector<nrtsim_bind_named_tensor_t> entries(keep.size());
    for (size_t i = 0; i < keep.size(); ++i) {
      entries[i].name = names[i].data();
      entries[i].name_len = names[i].size();
      entries[i].tensor.scalar_type = static_cast<int32_t>(keep[i].scalar_type());
      entries[i].tensor.ndim = static_cast<int32_t>(shapes[i].size());
      entries[i].tensor.shape = shapes[i].data();
      entries[i].tensor.data = keep[i].data_ptr();
      entries[i].tensor.nbytes = keep[i].nbytes();
    }
    check(nrtsim_bind_spmd_initialize(id, entries.data(), counts.data(), n_ranks, start_rank),
          "SPMDModel.initialize");
  }
  std::vector<at::Tensor> forward(const std::vector<at::Tensor> &inputs) {
    return forward_lists(id, {inputs}, "SPMDModel.forward")[0];
  }
  std::vector<std::vector<at::Tensor>> forward_ranked(
      const std::vector<std::vector<at::Tensor>> &inputs) {
    return forward_lists(id, inputs, "SPMDModel.forward_ranked");
  }
  void unload() { check(nrtsim_bind_model_action(id, NRTSIM_BIND_UNLOAD_ACTION), "SPMDModel.unload"); }
};

// What public callers construct but the simulator does not model: constructing it says so.
struct LayoutTransformation : torch::CustomClassHolder {
  LayoutTransformation(const std::string &, const std::string &, int64_t) {
    TORCH_CHECK_NOT_IMPLEMENTED(
        false,
        "torch.classes.neuron.LayoutTransformation (the device-side weight layout transformation "
        "of neuronx-distributed) is not modelled by nrtsim; build the model without "
        "weight layout optimization, so that weights load through torch.ops.neuron._parallel_load");
  }
};

std::vector<at::Tensor> forward_v2(std::vector<at::Tensor> inputs,
                                   c10::intrusive_ptr<Model> model) {
  TORCH_CHECK(model, "forward_v2: model is None, expected a torch.classes.neuron.Model");
  return model->forward(inputs);
}

// On a device this places each rank's checkpoint in device memory; the simulated device reads
// host memory, so each tensor is only made contiguous.
std::vector<c10::Dict<std::string, at::Tensor>> parallel_load(
    std::vector<c10::Dict<std::string, at::Tensor>> checkpoint) {
  std::vector<c10::Dict<std::string, at::Tensor>> loaded;
  for (const auto &rank : checkpoint) {
    c10::Dict<std::string, at::Tensor> out;
    for (const auto &item : rank) out.insert(item.key(), item.value().contiguous());
    loaded.push_back(out);
  }
  return loaded;
}

void load_collectives_neuron(c10::intrusive_ptr<Model> model, int64_t vnc, int64_t vnc_count,
                             int64_t device_id, int64_t device_count) {
  TORCH_CHECK(model, "_load_collectives_neuron: model is None, expected a torch.classes.neuron.Model");
  model->load_collectives(vnc, vnc_count, device_id, device_count);
}

using ModelState = std::tuple<std::string, std::string, std::string>;
using SpmdState = std::tuple<std::string, std::string, std::string, int64_t, int64_t>;

TORCH_LIBRARY(neuron, m) {
  m.class_<Model>("Model")
      .def(torch::init<std::string, std::string>())
      .def("load", &Model::load)
      .def("blocking_load", &Model::blocking_load)
      .def("unload", &Model::unload)
      .def("load_collectives", &Model::load_collectives)
      .def("instance_count", &Model::instance_count)
      .def("set_neuron_devices", &Model::set_neuron_devices)
      .def("set_async_load",
           [](const c10::intrusive_ptr<Model> &self, bool value) {
             self->set_flag(NRTSIM_BIND_ASYNC_LOAD, value, "Model.set_async_load");
           })
      .def("set_lazy_load",
           [](const c10::intrusive_ptr<Model> &self, bool value) {
             self->set_flag(NRTSIM_BIND_LAZY_LOAD, value, "Model.set_lazy_load");
           })
      .def("set_dynamic_batching",
           [](const c10::intrusive_ptr<Model> &self, bool value) {
             self->set_flag(NRTSIM_BIND_DYNAMIC_BATCHING, value, "Model.set_dynamic_batching");
           })
      .def("set_dynamic_batching_mixed", &Model::set_dynamic_batching_mixed)
      .def("save_neff",
           [](const c10::intrusive_ptr<Model> &self, std::string path) {
             return save_bytes(model_bytes(self->id, NRTSIM_BIND_NEFF), path);
           })
      .def("save_metaneff",
           [](const c10::intrusive_ptr<Model> &self, std::string path) {
             return save_bytes(model_bytes(self->id, NRTSIM_BIND_METANEFF_BYTES), path);
           })
      .def_pickle(
          [](const c10::intrusive_ptr<Model> &self) -> ModelState {
            return {kModelState, model_bytes(self->id, NRTSIM_BIND_NEFF),
                    model_bytes(self->id, NRTSIM_BIND_METANEFF_BYTES)};
          },
          [](ModelState state) {
            TORCH_CHECK(std::get<0>(state) == kModelState,
                        "a saved torch.classes.neuron.Model holds state \"", std::get<0>(state),
                        "\", expected \"", kModelState,
                        "\" (libtorchneuron's own saved state is not public, so nrtsim cannot "
                        "read it)");
            return c10::make_intrusive<Model>(std::get<1>(state), std::get<2>(state));
          });

  m.class_<SPMDModel>("SPMDModel")
      .def(torch::init<std::string, std::string, int64_t, int64_t>())
      .def("initialize", &SPMDModel::initialize)
      .def("forward", &SPMDModel::forward)
      .def("forward_ranked", &SPMDModel::forward_ranked)
      // The simulated device is host memory, so outputs are always on the CPU, and a launch
      // returns once it completed.
      .def("forward_ranked_to_cpu", &SPMDModel::forward_ranked)
      .def("forward_async", &SPMDModel::forward_ranked)
      .def("unload", &SPMDModel::unload)
      .def("save_neff",
           [](const c10::intrusive_ptr<SPMDModel> &self, std::string path) {
             return save_bytes(model_bytes(self->id, NRTSIM_BIND_NEFF), path);
           })
      .def("save_metaneff",
           [](const c10::intrusive_ptr<SPMDModel> &self, std::string path) {
             return save_bytes(model_bytes(self->id, NRTSIM_BIND_METANEFF_BYTES), path);
           })
      .def_pickle(
          [](const c10::intrusive_ptr<SPMDModel> &self) -> SpmdState {
            return {kSpmdState, model_bytes(self->id, NRTSIM_BIND_NEFF),
                    model_bytes(self->id, NRTSIM_BIND_METANEFF_BYTES), self->local_ranks,
                    self->world_size};
          },
          [](SpmdState state) {
            TORCH_CHECK(std::get<0>(state) == kSpmdState,
                        "a saved torch.classes.neuron.SPMDModel holds state \"",
                        std::get<0>(state), "\", expected \"", kSpmdState, "\"");
            return c10::make_intrusive<SPMDModel>(std::get<1>(state), std::get<2>(state),
                                                  std::get<3>(state), std::get<4>(state));
          });

  m.class_<LayoutTransformation>("LayoutTransformation")
      .def(torch::init<std::string, std::string, int64_t>());

  m.def("forward_v2(Tensor[] inputs, __torch__.torch.classes.neuron.Model model) -> Tensor[]",
        forward_v2);
  m.def("_parallel_load(Dict(str, Tensor)[] checkpoint) -> Dict(str, Tensor)[]", parallel_load);
  m.def(
      "_load_collectives_neuron(__torch__.torch.classes.neuron.Model model, int vnc, "
      "int vnc_count, int ctx_device_id, int ctx_device_count) -> ()",
      load_collectives_neuron);
}

// nrtsim's own operators, beside libtorchneuron's names.
TORCH_LIBRARY(nrtsim, m) {
  m.def("backend() -> str", []() { return std::string(nrtsim_bind_backend()); });
}

}  // namespace nrtsim_torch

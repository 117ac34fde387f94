// Batch planning: inputs (files, directories, globs), a JSON Lines manifest with per-job
// overrides, output names from a template, shards.
#include "cli/batch/plan.h"

#include <dirent.h>
#include <glob.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "core/grid_spec.h"
#include "core/inside_grid.h"
#include "io/files.h"

namespace voxtile {
namespace {

const char* const kMeshExtensions[] = {"obj", "ply", "stl", "gltf", "glb", "fbx", "off", "dae", "3mf", "3ds", "x3d", "blend"};

bool mesh_extension(const std::string& path) {
  const std::string e = lower_extension(path);
  for (const char* m : kMeshExtensions)
    if (e == m) return true;
  return false;
}

// Files, directories (their mesh files, sorted, not recursive) and glob patterns, in order.
std::vector<std::string> expand_inputs(const std::vector<std::string>& inputs) {
  std::vector<std::string> out;
  for (const std::string& in : inputs) {
    if (is_directory(in)) {
      std::vector<std::string> files;
      if (DIR* d = opendir(in.c_str())) {
        while (dirent* e = readdir(d)) {
          const std::string name = e->d_name;
          const std::string path = (in.back() == '/' ? in : in + "/") + name;
          if (name[0] != '.' && !is_directory(path) && mesh_extension(name)) files.push_back(path);
        }
        closedir(d);
      }
      std::sort(files.begin(), files.end());
      out.insert(out.end(), files.begin(), files.end());
    } else if (in.find_first_of("*?[") != std::string::npos) {
      glob_t g{};
      if (glob(in.c_str(), 0, nullptr, &g) == 0)
        for (size_t i = 0; i < g.gl_pathc; ++i) out.push_back(g.gl_pathv[i]);
      globfree(&g);  // glob sorts its matches
    } else {
      out.push_back(in);
    }
  }
  return out;
}

std::string res_tag(const GridArgs& g) {
  std::ostringstream s;
  if (!g.dims.empty()) s << g.dims[0] << "x" << g.dims[1] << "x" << g.dims[2];
  else if (!g.voxel_size.empty()) s << "vs" << g.voxel_size[0];
  else s << (g.resolution ? g.resolution : 256);
  return s.str();
}

}  // namespace

std::string expand_template(const std::string& t, const Job& j, const std::string& option) {
  const size_t slash = j.input.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : j.input.substr(0, slash);
  const std::string name = slash == std::string::npos ? j.input : j.input.substr(slash + 1);
  const size_t dot = name.rfind('.');
  const std::string stem = dot == std::string::npos || dot == 0 ? name : name.substr(0, dot);
  const std::string ext = dot == std::string::npos || dot == 0 ? "" : name.substr(dot + 1);
  std::string target = j.target;
  std::replace(target.begin(), target.end(), ',', '+');
  std::replace(target.begin(), target.end(), ':', '_');
  const std::map<std::string, std::string> vars = {{"dir", dir},       {"stem", stem},           {"name", name},
                                                   {"ext", ext},       {"res", res_tag(j.grid)}, {"target", target},
                                                   {"mode", j.mode}, {"index", std::to_string(j.index)}};
  std::string out;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] != '{') {
      out += t[i];
      continue;
    }
    const size_t close = t.find('}', i);
    if (close == std::string::npos) fail(ErrorKind::kUsage, option + ": unclosed '{' in " + t);
    const auto it = vars.find(t.substr(i + 1, close - i - 1));
    if (it == vars.end())
      fail(ErrorKind::kUsage, option + ": unknown field {" + t.substr(i + 1, close - i - 1) +
                                  "} (known: dir, stem, name, ext, res, target, mode, index)");
    out += it->second;
    i = close;
  }
  return out;
}

namespace {

// A manifest line's overrides of the command-line options.
void apply_overrides(const nlohmann::json& o, Job& j, const std::string& where) {
  auto numbers = [&](const char* key, size_t n) {
    std::vector<double> v;
    const nlohmann::json& x = o.at(key);
    if (x.is_number()) v.push_back(x.get<double>());
    else if (x.is_array())
      for (const auto& e : x) {
        if (!e.is_number()) fail(ErrorKind::kUsage, where + ": \"" + key + "\" must hold numbers");
        v.push_back(e.get<double>());
      }
    else fail(ErrorKind::kUsage, where + ": \"" + key + "\" must be a number or an array");
    if (n && v.size() != n) fail(ErrorKind::kUsage, where + ": \"" + key + "\" needs " + std::to_string(n) + " numbers");
    return v;
  };
  // Grid sizes: whole numbers in 0..65536 (the grid checks say more about the exact limit).
  auto integer = [&](const char* key, double x) {
    if (!(x >= 0 && x <= kMaxGridDim) || x != std::floor(x))
      fail(ErrorKind::kUsage, where + ": \"" + key + "\" must be a whole number from 0 to " + std::to_string(kMaxGridDim));
    return int32_t(x);
  };
  for (auto it = o.begin(); it != o.end(); ++it) {
    const std::string& k = it.key();
    if (k == "input" || k == "output") continue;
    if (k == "resolution" || k == "voxel_size" || k == "dims") {
      j.grid.resolution = 0;
      j.grid.voxel_size.clear();
      j.grid.dims.clear();
    }
  }
  for (auto it = o.begin(); it != o.end(); ++it) {
    const std::string& k = it.key();
    if (k == "input" || k == "output") continue;
    if (k == "resolution") j.grid.resolution = integer("resolution", numbers("resolution", 1)[0]);
    else if (k == "voxel_size") j.grid.voxel_size = numbers("voxel_size", 0);
    else if (k == "dims") {
      const auto v = numbers("dims", 3);
      j.grid.dims = {integer("dims", v[0]), integer("dims", v[1]), integer("dims", v[2])};
    } else if (k == "pad") j.grid.pad = integer("pad", numbers("pad", 1)[0]);
    else if (k == "bbox") j.grid.bbox = numbers("bbox", 6);
    else if (k == "mode" && it->is_string()) j.mode = it->get<std::string>();
    else if (k == "loader" && it->is_string()) j.loader = it->get<std::string>();
    else if (k == "target" && it->is_string()) j.target = it->get<std::string>();
    else if (k == "inside" && it->is_string()) j.inside = it->get<std::string>();
    else if (k == "band") {
      if (it->is_string() && it->get<std::string>() == "all")
        j.band = kBandAll;
      else if (it->is_string() || (j.band = integer("band", numbers("band", 1)[0])) < 1)
        fail(ErrorKind::kUsage,
             where + ": \"band\" must be a width from 1 to " + std::to_string(kMaxBand) + " voxels or \"all\"");
    } else
      fail(ErrorKind::kUsage, where + ": unknown or mistyped key \"" + k + "\"");
  }
  if (j.mode != "thin" && j.mode != "conservative") fail(ErrorKind::kUsage, where + ": mode must be thin or conservative");
  if (j.loader != "auto" && j.loader != "native" && j.loader != "assimp")
    fail(ErrorKind::kUsage, where + ": loader must be auto, native or assimp");
}

}  // namespace

std::vector<Job> plan_batch(const BatchCmdOptions& o) {
  Job base;
  base.grid = o.grid;
  base.mode = o.mode;
  base.target = o.target;
  base.loader = o.load.loader;
  base.inside = o.solid.inside;
  base.band = o.solid.band;
  std::vector<std::pair<Job, std::string>> jobs;  // job, explicit output
  for (const std::string& in : expand_inputs(o.inputs)) {
    Job j = base;
    j.input = in;
    jobs.push_back({j, ""});
  }
  if (!o.manifest.empty()) {
    std::istringstream f(read_text_file(o.manifest));  // (a byte-order mark, UTF-16: io/files.h plain_text)
    size_t line_no = 0;
    for (std::string line; std::getline(f, line);) {
      ++line_no;
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      const std::string where = o.manifest + ":" + std::to_string(line_no);
      nlohmann::json obj;
      try {
        obj = nlohmann::json::parse(line);
      } catch (const std::exception& e) {
        fail(ErrorKind::kInput, where + ": not JSON (" + std::string(e.what()) + ")");
      }
      if (!obj.is_object() || !obj.contains("input") || !obj["input"].is_string())
        fail(ErrorKind::kInput, where + ": each line needs an object with a string \"input\"");
      Job j = base;
      j.input = obj["input"].get<std::string>();
      apply_overrides(obj, j, where);
      jobs.push_back({j, obj.contains("output") && obj["output"].is_string() ? obj["output"].get<std::string>() : ""});
    }
  }
  if (jobs.empty()) fail(ErrorKind::kUsage, "no input: give files, directories, patterns or --manifest");
  std::vector<Job> out;
  std::map<std::string, std::string> seen;
  const RenderOptions picture = o.preview.path.empty() ? RenderOptions{} : o.preview.picture.options();
  for (size_t i = 0; i < jobs.size(); ++i) {
    Job j = jobs[i].first;
    j.index = i;
    if (!jobs[i].second.empty()) j.output = jobs[i].second;
    else if (!o.out_template.empty()) j.output = expand_template(o.out_template, j);
    else fail(ErrorKind::kUsage, j.input + ": no output: give --out TEMPLATE or \"output\" in the manifest");
    auto not_stdout = [&](const std::string& path) {
      if (path == "-") fail(ErrorKind::kUsage, j.input + ": batch writes files, not standard output (-); use voxelize");
    };
    not_stdout(j.output);
    j.format = o.format.empty() ? format_from_path(j.output) : parse_format(o.format);
    j.make_dirs = true;  // like mkdir -p: the directories the template or manifest names
    if (!o.preview.path.empty()) {
      j.preview = expand_template(o.preview.path, j, "--preview");
      j.picture = picture;
    }
    not_stdout(j.preview);
    check_job(j);
    for (const std::string* path : {&j.output, &j.preview}) {
      if (path->empty()) continue;
      auto [it, fresh] = seen.emplace(*path, j.input);
      if (!fresh) fail(ErrorKind::kUsage, j.input + " and " + it->second + " would both write " + *path);
    }
    out.push_back(j);
  }
  return out;
}


Shard parse_shard(const std::string& text) {
  Shard s;
  if (text.empty()) return s;
  unsigned long i = 0, n = 0;
  char slash = 0;
  std::istringstream in(text);
  if (!(in >> i >> slash >> n) || slash != '/' || n == 0 || i >= n || !in.eof())
    fail(ErrorKind::kUsage, "--shard must be I/N with 0 <= I < N (got " + text + ")");
  s.index = i;
  s.count = n;
  return s;
}

std::vector<Job> shard_jobs(const std::vector<Job>& all, const Shard& shard) {
  std::vector<Job> jobs;
  for (const Job& j : all)
    if (j.index % shard.count == shard.index) jobs.push_back(j);
  return jobs;
}

}  // namespace voxtile

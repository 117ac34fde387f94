// `voxtile compare A B`: reads two grid outputs of any format, pairs their grids and compares them.
#include "cli/cmd_compare.h"

#include <iostream>
#include <sstream>

#include "cli/common.h"
#include "core/compare.h"
#include "core/error.h"
#include "core/progress.h"
#include "io/grid_reader.h"

namespace voxtile {
namespace {

std::string fmt(double v) {
  std::ostringstream s;
  s.precision(9);
  s << v;
  return s.str();
}

// NaN or infinity (no value differed, or no value to compare) as null.
nlohmann::ordered_json finite_or_null(double v) { return std::isfinite(v) ? nlohmann::ordered_json(v) : nullptr; }

nlohmann::ordered_json grid_json(const GridDiff& d) {
  return {{"a", d.name_a},          {"b", d.name_b},           {"equal", d.equal},
          {"active_a", d.active_a}, {"active_b", d.active_b},  {"both", d.both},
          {"only_a", d.only_a},     {"only_b", d.only_b},      {"iou", finite_or_null(d.iou)},
          {"max_abs_diff", finite_or_null(d.max_abs_diff)},    {"values_differing", d.values_differing},
          {"dims_equal", d.dims_equal}, {"transform_equal", d.transform_equal}, {"types_equal", d.types_equal}};
}

std::string grid_text(const GridDiff& d, const SparseGrid& a, const SparseGrid& b) {
  std::ostringstream s;
  s << "grid \"" << d.name_a << "\" vs \"" << d.name_b << "\": " << (d.equal ? "equal" : "different") << "; active A "
    << d.active_a << ", B " << d.active_b << ", both " << d.both << ", only A " << d.only_a << ", only B " << d.only_b
    << ", IoU " << fmt(d.iou) << ", max |diff| " << fmt(d.max_abs_diff) << ", values differing " << d.values_differing;
  if (!d.dims_equal)
    s << "; dims " << a.spec.dims.x << "x" << a.spec.dims.y << "x" << a.spec.dims.z << " vs " << b.spec.dims.x << "x"
      << b.spec.dims.y << "x" << b.spec.dims.z;
  if (!d.transform_equal) s << "; voxel size or origin differ";
  if (!d.types_equal) s << "; types " << value_type_name(a.value_type) << " vs " << value_type_name(b.value_type);
  return s.str();
}

int compare(const CompareCmdOptions& o) {
  if (!(o.tolerance >= 0)) fail(ErrorKind::kUsage, "--tolerance must be >= 0");
  GridFile a, b;
  {
    const ProgressStage stage("read " + o.a);
    a = read_grid_file(o.a);
  }
  {
    const ProgressStage stage("read " + o.b);
    b = read_grid_file(o.b);
  }
  const ProgressStage stage("compare");
  std::vector<std::string> lines;
  nlohmann::ordered_json json = nlohmann::json::array();
  bool equal = true;
  if (a.has_buckets && b.has_buckets && o.grid.empty()) {
    const BucketDiff d = compare_buckets(a.buckets, b.buckets, o.tolerance);
    equal = d.equal;
    std::ostringstream s;
    s << "buckets: " << (d.equal ? "equal" : "different") << "; voxels A " << d.voxels_a << ", B " << d.voxels_b
      << ", both " << d.both << ", only A " << d.only_a << ", only B " << d.only_b << ", fragments A " << d.fragments_a
      << ", B " << d.fragments_b << ", lists differing " << d.lists_differing << ", max |attribute diff| "
      << fmt(d.max_abs_diff) << (d.grid_equal ? "" : "; grids differ") << (d.attrs_equal ? "" : "; attribute sets differ");
    lines.push_back(s.str());
    json.push_back({{"kind", "buckets"},
                    {"equal", d.equal},
                    {"voxels_a", d.voxels_a},
                    {"voxels_b", d.voxels_b},
                    {"both", d.both},
                    {"only_a", d.only_a},
                    {"only_b", d.only_b},
                    {"fragments_a", d.fragments_a},
                    {"fragments_b", d.fragments_b},
                    {"lists_differing", d.lists_differing},
                    {"max_abs_diff", finite_or_null(d.max_abs_diff)},
                    {"grid_equal", d.grid_equal},
                    {"attrs_equal", d.attrs_equal}});
  } else {
    auto select = [&](GridFile& f) {
      if (o.grid.empty()) return;
      std::vector<SparseGrid> keep;
      for (SparseGrid& g : f.grids)
        if (g.name == o.grid) keep.push_back(std::move(g));
      if (keep.empty()) fail(ErrorKind::kInput, f.path + ": no grid named " + o.grid);
      f.grids = std::move(keep);
    };
    select(a);
    select(b);
    // One grid each: compare them whatever their names; otherwise pair by name.
    std::vector<std::pair<const SparseGrid*, const SparseGrid*>> pairs;
    if (a.grids.size() == 1 && b.grids.size() == 1) {
      pairs.push_back({&a.grids[0], &b.grids[0]});
    } else {
      for (const SparseGrid& g : a.grids) {
        const SparseGrid* match = nullptr;
        for (const SparseGrid& h : b.grids)
          if (h.name == g.name) match = &h;
        pairs.push_back({&g, match});
      }
      for (const SparseGrid& h : b.grids) {
        bool found = false;
        for (const SparseGrid& g : a.grids) found = found || g.name == h.name;
        if (!found) pairs.push_back({nullptr, &h});
      }
    }
    for (const auto& [ga, gb] : pairs) {
      if (!ga || !gb) {
        equal = false;
        const std::string name = ga ? ga->name : gb->name;
        lines.push_back("grid \"" + name + "\": only in " + (ga ? "A" : "B"));
        json.push_back({{ga ? "a" : "b", name}, {"equal", false}, {"only_in", ga ? "a" : "b"}});
        continue;
      }
      const GridDiff d = compare_grids(*ga, a.has_transform, *gb, b.has_transform, o.tolerance, a.cube_dims, b.cube_dims);
      equal = equal && d.equal;
      lines.push_back(grid_text(d, *ga, *gb));
      json.push_back(grid_json(d));
    }
  }
  if (o.quiet) {
  } else if (o.json) {
    print_json_line({{"a", o.a},
                     {"b", o.b},
                     {"format_a", a.format},
                     {"format_b", b.format},
                     {"tolerance", o.tolerance},
                     {"equal", equal},
                     {"comparisons", json}});
  } else {
    std::cout << "A: " << o.a << " (" << a.format << ")\nB: " << o.b << " (" << b.format << ")\n";
    for (const std::string& l : lines) std::cout << l << "\n";
    std::cout << (equal ? "equal" : "different") << std::endl;
  }
  return equal ? 0 : 1;
}

}  // namespace

void setup_compare(CLI::App& app, CompareCmdOptions& o) {
  app.add_option("a", o.a, "First grid file (.vdb .ply .npy .raw .npz .binvox .vox)")->required();
  app.add_option("b", o.b, "Second grid file")->required();
  app.add_option("--tolerance", o.tolerance, "Largest absolute value difference still equal (default 0)")
      ->capture_default_str();
  app.add_option("--grid", o.grid, "Compare only the grids of this name");
  app.add_flag("--json", o.json, "Print one JSON object instead of text");
  app.add_flag("-q,--quiet", o.quiet, "Print nothing (like cmp -s): the exit code says equal (0) or different (1); errors still go to stderr");
}

int run_compare(const CompareCmdOptions& o) {
  try {
    return compare(o);
  } catch (const Error& e) {
    std::cerr << "voxtile: error: " << e.what() << "\n";
    return 2;
  } catch (const std::bad_alloc&) {
    std::cerr << "voxtile: error: out of memory\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "voxtile: error: " << e.what() << "\n";
    return 2;
  }
}

}  // namespace voxtile

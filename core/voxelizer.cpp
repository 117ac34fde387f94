// The backend-independent half of Voxelizer: target planning, limits, names, checks and counters.
#include "core/voxelizer.h"

#include <algorithm>

#include "core/band_search.h"
#include "core/error.h"
#include "core/inside_grid.h"
#include "core/progress.h"
#include "core/timer.h"

namespace voxtile {

TargetPlan plan_targets(const std::vector<TargetSpec>& targets, uint64_t num_triangles) {
  if (targets.empty()) fail(ErrorKind::kUsage, "no target to voxelize");
  for (const TargetSpec& t : targets) {
    make_target_spec(t.target, t.blend);
    if (t.target == Target::kId && num_triangles >= uint64_t(0x7fffffff))
      fail(ErrorKind::kUsage, "--target id needs fewer than 2^31 triangles");
  }
  const auto value_target = std::find_if(targets.begin(), targets.end(), [](const TargetSpec& t) {
    return t.target != Target::kBinary && !is_field_target(t.target);
  });
  TargetPlan plan;
  plan.source.resize(targets.size(), SIZE_MAX);
  plan.masks_only.resize(targets.size());
  plan.names.resize(targets.size());
  size_t surfaces = 0;
  for (size_t i = 0; i < targets.size(); ++i) {
    if (targets[i].target == Target::kSolid) plan.solid = true;
    if (targets[i].target == Target::kSdf) plan.sdf = true;
    if (is_field_target(targets[i].target)) continue;
    ++surfaces;
    plan.masks_only[i] = targets[i].target == Target::kBinary && value_target != targets.end();
    if (plan.masks_only[i]) continue;
    plan.source[i] = plan.rastered.size();
    plan.rastered.push_back(targets[i]);
  }
  // The solid's surface: the first rastered target's voxels, or a binary raster of its own.
  if (plan.solid && plan.rastered.empty()) plan.rastered.push_back(make_target_spec(Target::kBinary));
  for (size_t i = 0; i < targets.size(); ++i) {
    if (plan.masks_only[i]) plan.source[i] = plan.source[size_t(value_target - targets.begin())];
    plan.names[i] = surfaces == 1 && targets.size() == 1 && targets[i].target == Target::kBinary
                        ? "voxels"
                        : target_spec_name(targets[i]);
  }
  return plan;
}

void Voxelizer::set_mesh(const Mesh& mesh) {
  load_mesh(mesh);
  m_mesh = &mesh;
}

const Mesh& Voxelizer::mesh() const {
  static const Mesh kEmpty;
  return m_mesh ? *m_mesh : kEmpty;
}

std::vector<SparseGrid> Voxelizer::voxelize(const GridSpec& spec, const VoxelizeOptions& options,
                                            const std::vector<TargetSpec>& targets, VoxelizeStats* stats) {
  check_grid_dims(spec);
  const TargetPlan plan = plan_targets(targets, mesh().num_triangles());
  if (plan.sdf && options.band != kBandAll && (options.band < 1 || options.band > kMaxBand))
    fail(ErrorKind::kUsage, "--band must be 1 to " + std::to_string(kMaxBand) + " voxels or all");
  VoxelizeStats local;
  VoxelizeStats& st = stats ? *stats : local;
  st.device = device_name();
  st.triangles = mesh().num_triangles();
  std::vector<SparseGrid> rastered;
  if (!plan.rastered.empty()) {
    const ProgressStage stage("surface");
    rastered = raster(spec, options, plan.rastered, st);
  }
  if (rastered.size() != plan.rastered.size()) fail(ErrorKind::kInternal, "a backend returned the wrong number of grids");
  // The sdf targets' unsigned band (one for all of them), then the inside test: where no solid
  // target needs the whole of it and the band is narrow, only in the band's bricks (the sign's
  // voxels: the same bits there; the winding test on open meshes sums their boundary per voxel).
  SparseGrid band;
  if (plan.sdf) {
    const ProgressStage stage("distance band");
    band = band_distance(spec, options.band, st);
  }
  SparseGrid inside;
  if (plan.solid || plan.sdf) {
    const ProgressStage stage("inside test");
    inside = inside_centres(spec, options.inside, st, plan.solid || options.band == kBandAll ? nullptr : &band);
  }
  std::vector<SparseGrid> grids(targets.size());
  size_t sdf_left = 0;  // (the last sdf target takes the band itself)
  for (const TargetSpec& t : targets) sdf_left += t.target == Target::kSdf;
  for (size_t i = 0; i < targets.size(); ++i) {
    if (targets[i].target == Target::kSolid) {
      const auto t0 = Clock::now();
      grids[i] = combine_masks({&rastered[0], &inside}, 1);
      grids[i].spec = spec;
      st.add_stage("solid_merge", ms_since(t0));
    } else if (targets[i].target == Target::kSdf) {
      const auto t0 = Clock::now();
      grids[i] = --sdf_left ? band : std::move(band);
      apply_sign(grids[i], inside);
      grids[i].level_set = true;
      grids[i].background = band_background(grids[i], spec, options.band);
      st.add_stage("sdf_sign", ms_since(t0));
    } else if (plan.masks_only[i]) {
      const SparseGrid& src = rastered[plan.source[i]];
      grids[i].spec = spec;
      grids[i].keys = src.keys;
      grids[i].masks = src.masks;
    }
  }
  for (size_t i = 0; i < targets.size(); ++i) {
    if (!plan.masks_only[i] && !is_field_target(targets[i].target)) grids[i] = std::move(rastered[plan.source[i]]);
    grids[i].name = plan.names[i];
  }
  st.bricks = grids[0].num_bricks();
  st.active_voxels = grids[0].active_voxels();
  return grids;
}

SparseGrid Voxelizer::voxelize(const GridSpec& spec, const VoxelizeOptions& options, VoxelizeStats* stats) {
  return std::move(voxelize(spec, options, {options.spec()}, stats)[0]);
}

Buckets Voxelizer::bucket(const GridSpec& spec, const BucketOptions& options, VoxelizeStats* stats) {
  check_grid_dims(spec);
  if (mesh().num_triangles() >= size_t(0x7fffffff)) fail(ErrorKind::kUsage, "bucketing needs fewer than 2^31 triangles");
  check_bucket_attrs(mesh(), options.attrs);
  VoxelizeStats local;
  VoxelizeStats& st = stats ? *stats : local;
  st.device = device_name();
  st.triangles = mesh().num_triangles();
  Buckets b = bucket_mesh(spec, options, st);
  st.active_voxels = b.num_voxels();
  st.tile_pairs = b.num_fragments();  // fragments
  return b;
}

}  // namespace voxtile

// `voxtile generate scan|tubes|room|sphere|cad -o OUT.ply`.
#include "cli/cmd_generate.h"

#include <iostream>

#include "cli/common.h"
#include "core/error.h"
#include "core/meshgen.h"
#include "core/progress.h"
#include "io/mesh_reader.h"
#include "io/mesh_writer.h"

namespace voxtile {

void setup_generate(CLI::App& app, GenerateCmdOptions& o) {
  app.add_option("kind", o.kind,
                 "scan (subdivided input mesh), tubes (long thin triangles), room (huge + tiny), sphere (a closed UV "
                 "sphere of radius 1: --rings rings, 2 x rings segments) or cad (cylinders with fan caps and plates: "
                 "--objects parts of --sides sides)")
      ->required()
      ->check(CLI::IsMember({"scan", "tubes", "room", "sphere", "cad"}));
  app.add_option("-o,--output", o.output, "Output mesh: .ply, .stl, .obj, .off, .glb or .3mf; - for stdout")
      ->required();
  add_mesh_format_option(app, o.format);
  app.add_flag("--ascii", o.ascii, "ASCII .ply or .stl instead of binary");
  app.add_flag("--shuffle", o.shuffle, "Shuffle the order of the triangles (with --seed), as some exporters list them");
  app.add_option("--input", o.input, "scan: the mesh to subdivide");
  add_load_options(app, o.load);
  app.add_option("--levels", o.levels, "scan: 1-to-4 subdivision levels")
      ->check(CLI::Range(0, 6))
      ->capture_default_str();
  app.add_option("--tubes", o.tubes, "tubes: number of tubes")->capture_default_str();
  app.add_option("--rings", o.rings, "tubes: rings per tube; sphere: rings (4 x rings^2 triangles)")
      ->capture_default_str();
  app.add_option("--sides", o.sides, "tubes: sides per ring (3 to 64); cad: sides per cylinder (3 to 65536)")
      ->check(CLI::Range(3, 65536))
      ->capture_default_str();
  app.add_option("--radius", o.radius, "tubes: tube radius")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--length", o.length,
                 "tubes: 0 for closed tubes around whole curves in [-1,1]^3 (about 10 long), else open tubes of this "
                 "length along curves in the unit ball")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--order", o.order,
                 "scan: file (each parent's four children together) or quarters (each level lists all first "
                 "children, then all second children...)")
      ->check(CLI::IsMember({"file", "quarters"}))
      ->capture_default_str();
  app.add_option("--objects", o.objects, "room: small objects (480 triangles each); cad: parts")->capture_default_str();
  app.add_option("--seed", o.seed, "random seed")->capture_default_str();
  add_verbosity_flags(app, o.verbosity, "The same line (the output's size)");
}

int run_generate(const GenerateCmdOptions& o) {
  const std::string format = mesh_format(o.output, o.format);
  check_standard_output({{o.output, binary_mesh(format, o.ascii)}}, false);
  Mesh m;
  if (o.kind == "scan") {
    if (o.input.empty()) fail(ErrorKind::kUsage, "generate scan needs --input MESH");
    m = subdivide(load_mesh(o.input, false, o.load.kind(), o.load.limits()).mesh, o.levels, o.order == "quarters");
  } else if (o.kind == "tubes") {
    // (a closed tube of one ring has no length: every triangle is degenerate)
    if (o.tubes < 1) fail(ErrorKind::kUsage, "generate tubes: --tubes must be at least 1");
    if (o.rings < (o.length > 0 ? 1u : 2u))
      fail(ErrorKind::kUsage,
           std::string("generate tubes: --rings must be at least ") + (o.length > 0 ? "1" : "2 for closed tubes"));
    if (o.sides > 64) fail(ErrorKind::kUsage, "generate tubes: --sides above 64");
    if (uint64_t(o.tubes) * o.rings * o.sides * 2 > (uint64_t(1) << 31))
      fail(ErrorKind::kUsage, "generate tubes: more than 2^31 triangles");
    if (o.length > 1000) fail(ErrorKind::kUsage, "generate tubes: --length above 1000");
    m = make_tubes(o.tubes, o.rings, o.sides, o.seed, o.radius, o.length);
  } else if (o.kind == "cad") {
    if (o.objects < 1 || uint64_t(o.objects) * o.sides * 4 > (uint64_t(1) << 31))
      fail(ErrorKind::kUsage, "generate cad: --objects must be at least 1, and at most 2^31 triangles");
    m = make_cad(o.objects, o.sides, o.seed);
  } else if (o.kind == "sphere") {
    if (o.rings < 2 || uint64_t(o.rings) * o.rings * 4 > (uint64_t(1) << 31))
      fail(ErrorKind::kUsage, "generate sphere: --rings must be 2 to 23170");
    m = make_uv_sphere(0, 0, 0, 1, int(o.rings), int(2 * o.rings));
  } else {
    if (uint64_t(o.objects) * 480 > (uint64_t(1) << 31))
      fail(ErrorKind::kUsage, "generate room: more than 2^31 triangles");
    m = make_room(o.objects, o.seed);
  }
  if (o.shuffle) shuffle_triangles(m, o.seed);
  {
    const ProgressStage stage("write " + o.output);
    write_mesh(m, o.output, o.ascii, format);
  }
  if (o.verbosity > 0)
    std::cerr << o.output << ": " << m.num_triangles() << " triangles, " << m.positions.size() << " vertices\n";
  return 0;
}

}  // namespace voxtile

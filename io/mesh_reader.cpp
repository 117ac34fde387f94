// Assimp-based mesh reader.
#include "io/mesh_reader.h"

#include <assimp/DefaultIOSystem.h>
#include <assimp/MemoryIOWrapper.h>
#include <assimp/importerdesc.h>
#include <assimp/material.h>
#include <assimp/postprocess.h>
#include <assimp/scene.h>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_reduce.h>
#include <unistd.h>

#include <algorithm>
#include <assimp/DefaultLogger.hpp>
#include <assimp/Importer.hpp>
#include <assimp/LogStream.hpp>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <new>
#include <type_traits>
#include <vector>

#include "core/error.h"
#include "io/files.h"
#include "io/mesh_append.h"
#include "io/native_mesh.h"
#include "io/png.h"

namespace voxtile {
namespace {

std::string first_line(std::string s) {
  const size_t nl = s.find_first_of("\r\n");
  if (nl != std::string::npos) s.resize(nl);
  while (!s.empty() && (s.back() == ' ' || s.back() == '.')) s.pop_back();
  return s.empty() ? "unknown error" : s;
}

struct Walker {
  const aiScene* scene;
  MeshLoadResult* out;
  MeshAppender* appender;
  std::vector<uint32_t> triangles;  // (reused)

  uint32_t material_color(unsigned m) const {
    return m < out->mesh.material_colors.size() ? out->mesh.material_colors[m] : 0xC8C8C8;
  }

  void node(const aiNode* n, const aiMatrix4x4& parent) {
    const aiMatrix4x4 m = parent * n->mTransformation;
    for (unsigned i = 0; i < n->mNumMeshes; ++i) mesh(n->mMeshes[i], m);
    for (unsigned i = 0; i < n->mNumChildren; ++i) node(n->mChildren[i], m);
  }

  void mesh(unsigned mesh_index, const aiMatrix4x4& m) {
    if (mesh_index >= scene->mNumMeshes) return;
    const aiMesh* am = scene->mMeshes[mesh_index];
    if (!am->mVertices) return;
    triangles.clear();
    for (unsigned f = 0; f < am->mNumFaces; ++f) {
      const aiFace& face = am->mFaces[f];
      if (face.mNumIndices == 3) triangles.insert(triangles.end(), face.mIndices, face.mIndices + 3);
      else ++out->non_triangle_primitives;
    }
    if (triangles.empty()) {
      if (am->mPrimitiveTypes == aiPrimitiveType_POINT || am->mNumFaces == 0) out->points += am->mNumVertices;
      return;
    }
    MeshPiece piece;
    piece.positions = am->mVertices;
    piece.num_vertices = am->mNumVertices;
    piece.normals = am->mNormals;
    piece.uvs = am->mTextureCoords[0];
    piece.colors = am->mColors[0];
    piece.triangles = triangles.data();
    piece.num_triangles = triangles.size() / 3;
    piece.mesh_index = mesh_index;
    piece.material_index = am->mMaterialIndex;
    piece.material_color = material_color(am->mMaterialIndex);
    appender->append(piece, m);
  }
};

// The base colour (glTF) or diffuse texture of every material: embedded (compressed or raw texels)
// or a file next to the model. A texture that cannot be read is a warning, not an error.
void load_textures(const aiScene* scene, const std::string& path, MeshLoadResult& out) {
  bool any = false;
  std::vector<Texture> textures(scene->mNumMaterials);
  for (unsigned m = 0; m < scene->mNumMaterials; ++m) {
    const aiMaterial* mat = scene->mMaterials[m];
    aiString name;
    if (!mat || (mat->GetTexture(aiTextureType_BASE_COLOR, 0, &name) != AI_SUCCESS &&
                 mat->GetTexture(aiTextureType_DIFFUSE, 0, &name) != AI_SUCCESS))
      continue;
    std::string why;
    Texture& t = textures[m];
    bool ok = false;
    if (const aiTexture* emb = scene->GetEmbeddedTexture(name.C_Str())) {
      if (emb->mHeight == 0) {
        ok = decode_texture(reinterpret_cast<const unsigned char*>(emb->pcData), emb->mWidth, t, why);
      } else {
        t.width = int32_t(emb->mWidth);
        t.height = int32_t(emb->mHeight);
        t.rgb.resize(size_t(t.width) * size_t(t.height) * 3);
        for (size_t i = 0; i < size_t(t.width) * size_t(t.height); ++i) {
          t.rgb[3 * i] = emb->pcData[i].r;
          t.rgb[3 * i + 1] = emb->pcData[i].g;
          t.rgb[3 * i + 2] = emb->pcData[i].b;
        }
        ok = true;
      }
    } else {
      ok = load_texture_file(texture_path(path, name.C_Str()), t, why);
    }
    if (!ok) {
      t = Texture{};
      out.warnings.push_back("texture '" + std::string(name.C_Str()) + "' not used: " + why);
    }
    any = any || ok;
  }
  if (any) out.mesh.material_textures = std::move(textures);
}

// Assimp's file access, serving the file being imported as UTF-8 text (io/files.h plain_text) when it
// is a text format that begins with a byte-order mark: Assimp 5.2's glTF, PLY and OBJ importers take
// a UTF-8 mark for garbage (glTF: "no suitable reader"), and its OFF importer cannot read UTF-16.
// Every other file the import opens (buffers, textures, material libraries) is read as it is.
class TextIOSystem : public Assimp::DefaultIOSystem {
 public:
  TextIOSystem(std::string path, std::string text) : m_path(std::move(path)), m_text(std::move(text)) {}
  Assimp::IOStream* Open(const char* file, const char* mode) override {
    if (std::strchr(mode, 'w') == nullptr && ComparePaths(file, m_path.c_str()))
      return new Assimp::MemoryIOStream(reinterpret_cast<const uint8_t*>(m_text.data()), m_text.size());
    return DefaultIOSystem::Open(file, mode);
  }

 private:
  std::string m_path, m_text;
};

// Whether path is a text format (for Assimp) that begins with a byte-order mark. STL is left out: a
// binary STL's header may begin with any bytes (Assimp skips a UTF-8 mark in ASCII STL itself).
bool text_with_mark(const std::string& path) {
  static const char* const kText[] = {"gltf", "off", "dae", "obj", "ply", "x3d", "amf", "x", "ase"};
  const std::string e = lower_extension(path);
  if (std::none_of(std::begin(kText), std::end(kText), [&](const char* t) { return e == t; })) return false;
  char b[4];
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return false;
  const size_t n = std::fread(b, 1, sizeof b, f);
  std::fclose(f);
  return byte_order_mark(b, n) != 0;
}

// Assimp says some of what it changes in a file only in its log: glTF faces with out-of-range
// indices dropped, OFF indices out of range moved to the last vertex, OFF faces without indices
// dropped. Its warnings and errors that say so become the load's warnings (never a silent change);
// the rest (3MF parts it skips, FBX version notes, default materials) are left out. Assimp's log is
// one per process and not thread-safe (it remembers the last message to leave out repeats), so reads
// that keep notes take turns: each reader process reads one file at a time anyway, and reads in this
// process happen only where no reader process could start.
class AssimpNotes {
 public:
  explicit AssimpNotes(std::string path) : m_turn(turn()), m_path(std::move(path)) {
    static const bool installed = [] {
      Assimp::DefaultLogger::create("", Assimp::Logger::NORMAL, 0);
      Assimp::DefaultLogger::get()->attachStream(new Stream, Assimp::Logger::Warn | Assimp::Logger::Err);
      return true;
    }();
    (void)installed;
    current() = this;
  }
  ~AssimpNotes() { current() = nullptr; }
  AssimpNotes(const AssimpNotes&) = delete;
  AssimpNotes& operator=(const AssimpNotes&) = delete;

  // The kept messages, each once ("Assimp: ..."; Assimp's log leaves out repeats of a message, so
  // how often one came is not known), at most kMost of them.
  std::vector<std::string> lines() const {
    std::vector<std::string> out;
    for (size_t i = 0; i < m_messages.size() && i < kMost; ++i) out.push_back("Assimp: " + m_messages[i]);
    if (m_messages.size() > kMost)
      out.push_back("Assimp: " + std::string(m_messages.size() == kKept ? "at least " : "") +
                    std::to_string(m_messages.size() - kMost) + " more kinds of such messages");
    return out;
  }

 private:
  static constexpr size_t kMost = 8, kKept = 64;  // shown, remembered
  struct Stream : Assimp::LogStream {
    void write(const char* message) override {
      if (AssimpNotes* n = current()) n->add(message);
    }
  };
  static AssimpNotes*& current() {
    static AssimpNotes* notes = nullptr;  // (set and read under turn())
    return notes;
  }
  static std::mutex& turn() {
    static std::mutex m;
    return m;
  }
  // Whether a message says the geometry read differs from the file's: words that say so, outside
  // the file's name (an OBJ named "x_truncated.obj" gets a note about "x_truncated.mtl"), in
  // messages about neither materials nor textures.
  bool changes_geometry(const std::string& m) const {
    std::string l(m);
    for (const std::string& name : {m_path, base_name(m_path)}) {
      for (size_t at; !name.empty() && (at = l.find(name)) != std::string::npos;) l.erase(at, name.size());
    }
    std::transform(l.begin(), l.end(), l.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    if (l.find("material") != std::string::npos || l.find("texture") != std::string::npos) return false;
    static const char* const kWords[] = {"dropped", "out of range", "out-of-range", "not allowed", "aren't allowed",
                                         "incorrect", "invalid", "skipping", "truncated", "clamp"};
    return std::any_of(std::begin(kWords), std::end(kWords), [&](const char* w) { return l.find(w) != std::string::npos; });
  }
  static std::string base_name(const std::string& path) {
    const size_t slash = path.rfind('/'), dot = path.rfind('.');
    const size_t from = slash == std::string::npos ? 0 : slash + 1;
    return path.substr(from, dot != std::string::npos && dot > from ? dot - from : std::string::npos);
  }
  void add(const char* raw) {
    std::string m(raw);
    // "Warn,  T0: text\n" -> "text"
    if (m.rfind("Warn,", 0) == 0 || m.rfind("Error,", 0) == 0) {
      const size_t colon = m.find(": ");
      if (colon != std::string::npos) m.erase(0, colon + 2);
    }
    m = first_line(m);
    if (m.rfind("Skipping one or more lines with the same contents", 0) == 0) return;  // (the log's repeats)
    if (!changes_geometry(m) || m_messages.size() == kKept) return;
    if (std::find(m_messages.begin(), m_messages.end(), m) == m_messages.end()) m_messages.push_back(m);
  }
  std::lock_guard<std::mutex> m_turn;
  std::string m_path;
  std::vector<std::string> m_messages;
};

MeshLoadResult read_in_process(const std::string& path, bool require_triangles, bool textures) {
  MeshLoadResult out;
  try {
    const GltfAssimpLimits gltf = gltf_assimp_limits(path, out.warnings);
    Assimp::Importer importer;
    AssimpNotes notes(path);
    if (text_with_mark(path)) importer.SetIOHandler(new TextIOSystem(path, read_text_file(path)));
    const aiScene* scene = importer.ReadFile(path, aiProcess_Triangulate | aiProcess_SortByPType);
    if (!scene) {
      const std::string why = first_line(importer.GetErrorString()), ext = lower_extension(path);
      if (why.find("No suitable reader found") != std::string::npos) {  // Assimp's words, said plainly
        if (ext == "mtl") fail(ErrorKind::kInput, path + ": a material library, not a mesh (give the .obj that uses it)");
        if (ext.empty() || !importer.IsExtensionSupported(("." + ext).c_str()))
          fail(ErrorKind::kInput,
               path +
                   ": not a mesh format voxtile reads (.ply .stl .obj .off .glb .gltf .3mf, and Assimp's: "
                   ".fbx .dae .x3d and more)");
        fail(ErrorKind::kInput, path + ": cannot read: no ." + ext + " importer accepts its content");
      }
      fail(ErrorKind::kInput, path + ": cannot read: " + why);
    }
    if (!scene->mRootNode) fail(ErrorKind::kInput, path + ": the file has no scene");
    const size_t dot = path.rfind('.');
    if (dot != std::string::npos) {
      const size_t index = importer.GetImporterIndex(path.substr(dot).c_str());
      if (const aiImporterDesc* desc = index != size_t(-1) ? importer.GetImporterInfo(index) : nullptr)
        out.format = desc->mName;
    }
    // Diffuse colours of materials that set one (base colour for glTF).
    bool any_material_color = false;
    for (unsigned m = 0; m < scene->mNumMaterials; ++m) {
      aiColor4D c(0.784f, 0.784f, 0.784f, 1.f);
      if (scene->mMaterials[m] && (aiGetMaterialColor(scene->mMaterials[m], AI_MATKEY_BASE_COLOR, &c) == AI_SUCCESS ||
                                   aiGetMaterialColor(scene->mMaterials[m], AI_MATKEY_COLOR_DIFFUSE, &c) == AI_SUCCESS))
        any_material_color = true;
      out.mesh.material_colors.push_back(pack_color(c.r, c.g, c.b));
    }
    if (textures) load_textures(scene, path, out);
    for (std::string& line : notes.lines()) out.warnings.push_back(std::move(line));
    MeshAppender appender(out);
    Walker w{scene, &out, &appender, {}};
    w.node(scene->mRootNode, aiMatrix4x4());
    appender.finish(gltf.drop_normals, gltf.drop_uvs);
    if (!any_material_color) std::vector<uint32_t>().swap(out.mesh.material_colors);
    out.mesh.num_source_meshes = scene->mNumMeshes;
    out.mesh.num_materials = scene->mNumMaterials;
  } catch (const Error&) {
    throw;
  } catch (const std::bad_alloc&) {
    fail(ErrorKind::kInput, path + ": out of memory while reading (absurd sizes in the file?)");
  } catch (const std::exception& e) {
    fail(ErrorKind::kInput, path + ": cannot read: " + first_line(e.what()));
  }
  finish_load(out, path, require_triangles);
  return out;
}

}  // namespace

void finish_load(MeshLoadResult& out, const std::string& path, bool require_triangles) {
  Mesh& mesh = out.mesh;
  const size_t loaded = mesh.num_triangles();
  mesh.sanitize();
  if (out.dropped_bad_index)
    out.warnings.push_back("dropped " + std::to_string(out.dropped_bad_index) + " faces with out-of-range vertex indices");
  if (mesh.dropped_nonfinite)
    out.warnings.push_back("dropped " + std::to_string(mesh.dropped_nonfinite) + " triangles with NaN/Inf coordinates");
  if (mesh.dropped_degenerate)
    out.warnings.push_back("dropped " + std::to_string(mesh.dropped_degenerate) + " degenerate (zero-area) triangles");
  if (require_triangles && mesh.num_triangles() == 0) {
    std::string why = loaded == 0 ? "no triangles" : "no usable triangles (" + std::to_string(loaded) + " dropped)";
    if (loaded == 0 && out.points)
      why += " (it holds " + std::to_string(out.points) + " points only; 'voxtile points' bins points into a grid)";
    fail(ErrorKind::kInput, path + ": " + why);
  }
}

namespace {

// Third-party importers can crash on hostile files (seen: an assertion abort in Assimp's OFF
// path and a segfault in its PLY reader on a fuzzer case). Imports therefore run in reader
// processes (MeshLoaderPool) that stream each mesh back through an anonymous memory file; a crash
// or abort becomes a one-line input error naming the file, and the process is replaced.
class Stream {
 public:
  explicit Stream(int fd) : m_fd(fd) {}
  void bytes(const void* p, size_t n) {
    const char* c = static_cast<const char*>(p);
    while (n) {
      const ssize_t w = ::write(m_fd, c, n);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) _exit(3);
      c += w;
      n -= size_t(w);
    }
  }
  template <class T>
  void pod(const T& v) { bytes(&v, sizeof(v)); }
  template <class T, class A>
  void vec(const std::vector<T, A>& v) {
    pod(uint64_t(v.size()));
    bytes(v.data(), v.size() * sizeof(T));
  }
  void str(const std::string& s) {
    pod(uint64_t(s.size()));
    bytes(s.data(), s.size());
  }

 private:
  int m_fd;
};

class Reader {
 public:
  Reader(const char* p, size_t n) : m_p(p), m_end(p + n) {}
  void bytes(void* dst, size_t n) {
    if (n == 0) return;
    if (size_t(m_end - m_p) < n) throw Error(ErrorKind::kInternal, "mesh reader: truncated result from the reader process");
    std::memcpy(dst, m_p, n);
    m_p += n;
  }
  template <class T>
  T pod() {
    T v;
    bytes(&v, sizeof(v));
    return v;
  }
  template <class T, class A>
  void vec(std::vector<T, A>& v) {
    v.resize(pod<uint64_t>());
    bytes(v.data(), v.size() * sizeof(T));
  }
  std::string str() {
    std::string s(pod<uint64_t>(), '\0');
    bytes(s.data(), s.size());
    return s;
  }

 private:
  const char* m_p;
  const char* m_end;
};

void serialize(Stream& s, const MeshLoadResult& r) {
  s.pod(uint8_t(0));
  s.vec(r.mesh.positions);
  s.vec(r.mesh.indices);
  s.vec(r.mesh.mesh_ids);
  s.vec(r.mesh.material_ids);
  s.vec(r.mesh.normals);
  s.vec(r.mesh.uvs);
  s.vec(r.mesh.colors);
  s.vec(r.mesh.material_colors);
  s.pod(uint64_t(r.mesh.material_textures.size()));
  for (const Texture& t : r.mesh.material_textures) {
    s.pod(t.width);
    s.pod(t.height);
    s.vec(t.rgb);
  }
  s.pod(uint64_t(r.mesh.num_source_meshes));
  s.pod(uint64_t(r.mesh.num_materials));
  s.pod(uint64_t(r.mesh.dropped_degenerate));
  s.pod(uint64_t(r.mesh.dropped_nonfinite));
  s.pod(uint64_t(r.warnings.size()));
  for (const std::string& w : r.warnings) s.str(w);
  s.str(r.format);
  s.pod(uint64_t(r.dropped_bad_index));
  s.pod(uint64_t(r.non_triangle_primitives));
  s.pod(uint64_t(r.points));
}

MeshLoadResult deserialize(Reader& in) {
  MeshLoadResult r;
  if (in.pod<uint8_t>() != 0) {
    const int kind = in.pod<int32_t>();
    throw Error(static_cast<ErrorKind>(kind), in.str());
  }
  in.vec(r.mesh.positions);
  in.vec(r.mesh.indices);
  in.vec(r.mesh.mesh_ids);
  in.vec(r.mesh.material_ids);
  in.vec(r.mesh.normals);
  in.vec(r.mesh.uvs);
  in.vec(r.mesh.colors);
  in.vec(r.mesh.material_colors);
  r.mesh.material_textures.resize(in.pod<uint64_t>());
  for (Texture& t : r.mesh.material_textures) {
    t.width = in.pod<int32_t>();
    t.height = in.pod<int32_t>();
    in.vec(t.rgb);
    if (t.rgb.size() != size_t(std::max(0, t.width)) * size_t(std::max(0, t.height)) * 3)
      throw Error(ErrorKind::kInternal, "mesh reader: inconsistent texture from the reader process");
  }
  r.mesh.num_source_meshes = in.pod<uint64_t>();
  r.mesh.num_materials = in.pod<uint64_t>();
  r.mesh.dropped_degenerate = in.pod<uint64_t>();
  r.mesh.dropped_nonfinite = in.pod<uint64_t>();
  const uint64_t nw = in.pod<uint64_t>();
  for (uint64_t i = 0; i < nw; ++i) r.warnings.push_back(in.str());
  r.format = in.str();
  r.dropped_bad_index = in.pod<uint64_t>();
  r.non_triangle_primitives = in.pod<uint64_t>();
  r.points = in.pod<uint64_t>();
  return r;
}

// The reader side of one request: load `path` and write the result (or the error) to `fd`.
void load_to_fd(int fd, const std::string& path, bool require_triangles, bool textures) {
  Stream s(fd);
  try {
    serialize(s, read_in_process(path, require_triangles, textures));
  } catch (const Error& e) {
    s.pod(uint8_t(1));
    s.pod(int32_t(e.kind()));
    s.str(e.what());
  } catch (const std::bad_alloc&) {
    s.pod(uint8_t(1));
    s.pod(int32_t(ErrorKind::kInput));
    s.str(path + ": out of memory while reading (absurd sizes in the file?)");
  } catch (const std::exception& e) {
    s.pod(uint8_t(1));
    s.pod(int32_t(ErrorKind::kInput));
    s.str(path + ": cannot read: " + first_line(e.what()));
  }
}

// A request: flags and the path in one datagram, the memory file as SCM_RIGHTS.
struct RequestHeader {
  uint8_t require_triangles, textures;
};
constexpr size_t kMaxRequest = 8192;

// The reader process: requests until the pool closes its socket (fd 3).
[[noreturn]] void reader_main(int sock) {
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGPIPE}) std::signal(sig, SIG_DFL);
  // The importer's own diagnostics (assertion texts) are not ours to print.
  const int devnull = open("/dev/null", O_WRONLY);
  if (devnull >= 0) {
    dup2(devnull, 1);
    dup2(devnull, 2);
  }
  std::vector<char> buf(kMaxRequest);
  for (;;) {
    iovec iov{buf.data(), buf.size()};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    const ssize_t n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) _exit(0);  // the pool is gone
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    if (!c || c->cmsg_type != SCM_RIGHTS || size_t(n) < sizeof(RequestHeader)) _exit(4);
    int fd;
    std::memcpy(&fd, CMSG_DATA(c), sizeof(int));
    RequestHeader h;
    std::memcpy(&h, buf.data(), sizeof(h));
    const std::string path(buf.data() + sizeof(h), size_t(n) - sizeof(h));
    // Fault injection for the tests: a file whose name ends with $VOXTILE_TEST_READER_CRASH crashes
    // its reader as a crashing importer would (no file known to crash Assimp passes the header
    // checks any more).
    static const char* crash_on = std::getenv("VOXTILE_TEST_READER_CRASH");
    if (crash_on && *crash_on && path.size() >= std::strlen(crash_on) &&
        path.compare(path.size() - std::strlen(crash_on), std::string::npos, crash_on) == 0)
      std::raise(SIGSEGV);
    load_to_fd(fd, path, h.require_triangles != 0, h.textures != 0);
    close(fd);
    const char done = 1;
    while (send(sock, &done, 1, MSG_NOSIGNAL) < 0)
      if (errno != EINTR) _exit(0);
  }
}

MeshLoadResult read_result(int fd, const std::string& path) {
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_size <= 0) fail(ErrorKind::kInput, path + ": the importer returned nothing");
  void* map = mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
  if (map == MAP_FAILED) fail(ErrorKind::kResource, path + ": cannot map the loaded mesh: " + std::strerror(errno));
  struct Unmapper {
    void* p;
    size_t n;
    ~Unmapper() { munmap(p, n); }
  } unmapper{map, size_t(st.st_size)};
  Reader in(static_cast<const char*>(map), size_t(st.st_size));
  return deserialize(in);
}

struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0) close(fd);
  }
};

}  // namespace

// Reader processes started by exec'ing this program again (spawn_reader): the program's main()
// calls serve_as_mesh_reader_if_asked first, which turns the process into a reader when its
// arguments say so and records otherwise that the program can serve as one.
constexpr const char* kReaderArg = "--voxtile-internal-mesh-reader";
std::atomic<bool> g_reader_entry{false};

void serve_as_mesh_reader_if_asked(int argc, char** argv) {
  if (argc < 3 || std::strcmp(argv[1], kReaderArg) != 0) {
    g_reader_entry = true;
    return;
  }
  struct stat st;
  if (fstat(3, &st) != 0 || !S_ISSOCK(st.st_mode)) {
    std::fprintf(stderr, "%s: %s is voxtile's own, for its reader processes\n", argv[0], kReaderArg);
    std::exit(2);
  }
  limit_address_space(std::strtoull(argv[2], nullptr, 10));
  reader_main(3);
}

namespace {

// This program started again as a reader with `sock` as its fd 3 and no other descriptor but
// stdio; -1 when it cannot be (main() does not call serve_as_mesh_reader_if_asked, or the system
// refuses).
pid_t spawn_reader(int sock, uint64_t memory_bytes) {
  if (!g_reader_entry) return -1;
  posix_spawn_file_actions_t actions;
  if (posix_spawn_file_actions_init(&actions) != 0) return -1;
  posix_spawnattr_t attr;
  if (posix_spawnattr_init(&attr) != 0) {
    posix_spawn_file_actions_destroy(&actions);
    return -1;
  }
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);  // not the spawning thread's
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawn_file_actions_adddup2(&actions, sock, 3);  // (clears close-on-exec, also where sock is 3)
  posix_spawn_file_actions_addclosefrom_np(&actions, 4);
  char arg0[] = "voxtile-reader";
  std::string arg1 = kReaderArg, arg2 = std::to_string(memory_bytes);
  char* const args[] = {arg0, arg1.data(), arg2.data(), nullptr};
  pid_t pid = -1;
  if (posix_spawn(&pid, "/proc/self/exe", &actions, &attr, args, environ) != 0) pid = -1;
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  return pid;
}

}  // namespace

struct MeshLoaderPool::Impl {
  LoaderLimits limits;
  struct Process {
    pid_t pid = -1;
    int sock = -1;
  };
  std::mutex mutex;
  std::condition_variable cv;
  std::vector<Process> idle;
  size_t live = 0;  // processes owned (idle or serving a request)

  // Starts a reader process; false when the system refuses (the caller then reads in process).
  // A fork copies every lock as it stands, and a child that needs one another thread held waits
  // forever: a reader forked to replace a crashed one hung in TBB's parallel_for, whose state it
  // had inherited from this process's threads (GCC 12's sanitizer allocator is not fork-safe at
  // all). So a reader is forked only while this process has no other thread (the CLI makes its
  // pool first); otherwise this program is started again as a reader (spawn_reader: a new process
  // image holds no lock, for 5 ms more than a fork).
  bool start(Process* p) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) return false;
    pid_t pid = -1;
    if (other_threads() == 0) {  // (no thread can start meanwhile: this is the only one)
      std::fflush(nullptr);      // the child must not inherit (and repeat) pending output
      pid = fork();
      if (pid == 0) {
        // Keep only the request socket (as fd 3) and stdio: the pool's other sockets and the
        // parent's memory files must not stay open here.
        if (sv[1] != 3 && dup2(sv[1], 3) < 0) _exit(5);
        close_range(4, ~0u, 0);
        limit_address_space(limits.memory_bytes);
        reader_main(3);
      }
    } else {
      pid = spawn_reader(sv[1], limits.memory_bytes);
    }
    if (pid < 0) {
      close(sv[0]);
      close(sv[1]);
      return false;
    }
    close(sv[1]);
    p->pid = pid;
    p->sock = sv[0];
    return true;
  }

  // Reaps a process whose socket reported its end; returns the wait status.
  static int reap(Process& p) {
    close(p.sock);
    int status = 0;
    while (waitpid(p.pid, &status, 0) < 0 && errno == EINTR) {
    }
    return status;
  }

  Process take() {
    std::unique_lock<std::mutex> lock(mutex);
    cv.wait(lock, [&] { return !idle.empty() || live == 0; });
    if (idle.empty()) return {};
    Process p = idle.back();
    idle.pop_back();
    return p;
  }
  void give(const Process& p) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      idle.push_back(p);
    }
    cv.notify_one();
  }
  // Replaces a process whose socket reported its end; returns the ended one's wait status.
  int replace(Process& dead) {
    const int status = reap(dead);
    Process fresh;
    const bool ok = start(&fresh);
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (ok) idle.push_back(fresh);
      else --live;
    }
    cv.notify_all();
    return status;
  }
};

MeshLoaderPool::MeshLoaderPool(int processes, const LoaderLimits& limits) : m(new Impl) {
  m->limits = limits;
  if (!m->limits.memory_bytes) m->limits.memory_bytes = reader_memory_limit(processes);
  for (int i = 0; i < processes; ++i) {
    Impl::Process p;
    if (!m->start(&p)) break;
    m->idle.push_back(p);
    ++m->live;
  }
}

MeshLoaderPool::~MeshLoaderPool() {
  // Every process is idle by now (load() returns it before returning); closing its socket ends it.
  for (Impl::Process& p : m->idle) Impl::reap(p);
}

MeshLoadResult MeshLoaderPool::load(const std::string& path, bool textures, Loader loader) {
  return read(path, true, textures, loader);
}
MeshLoadResult MeshLoaderPool::inspect(const std::string& path, Loader loader) { return read(path, false, false, loader); }

Loader parse_loader(const std::string& name) {
  if (name == "auto") return Loader::kAuto;
  if (name == "native") return Loader::kNative;
  if (name == "assimp") return Loader::kAssimp;
  fail(ErrorKind::kUsage, "unknown loader '" + name + "' (expected auto, native or assimp)");
}
const char* loader_name(Loader loader) {
  return loader == Loader::kNative ? "native" : loader == Loader::kAssimp ? "assimp" : "auto";
}

MeshLoadResult MeshLoaderPool::read(const std::string& path, bool require_triangles, bool textures, Loader loader) {
  // The native readers run here, in this process: they bound every count by the file size and
  // parse on this process's threads.
  if (loader == Loader::kNative && !native_format(path))
    fail(ErrorKind::kUsage,
         path + ": --loader native reads .ply, .stl, .obj, .off, .gltf, .glb and .3mf only (use auto or assimp)");
  if (reads_natively(path, loader)) return read_native(path, require_triangles, textures);  // checks the file too
  check_input_file(path);
  if (point_cloud_extension(path))  // (no Assimp importer reads them)
    fail(ErrorKind::kInput, path + ": a point cloud, not a mesh ('voxtile points' bins points into a grid)");
  check_header_counts(path);  // before Assimp allocates for a hostile header
  if (path.size() + sizeof(RequestHeader) > kMaxRequest) fail(ErrorKind::kInput, path + ": path too long");
  for (int attempt = 0;; ++attempt) {
    Impl::Process p = m->take();
    if (p.pid < 0) return read_in_process(path, require_triangles, textures);  // no reader process could start
    FdCloser result{memfd_create("voxtile-mesh", MFD_CLOEXEC)};
    if (result.fd < 0) {
      m->give(p);
      return read_in_process(path, require_triangles, textures);
    }
    std::string request(sizeof(RequestHeader), '\0');
    const RequestHeader h{uint8_t(require_triangles), uint8_t(textures)};
    std::memcpy(request.data(), &h, sizeof(h));
    request += path;
    iovec iov{request.data(), request.size()};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &result.fd, sizeof(int));
    ssize_t sent;
    while ((sent = sendmsg(p.sock, &msg, MSG_NOSIGNAL)) < 0 && errno == EINTR) {
    }
    if (sent < 0) {
      // The process ended while idle (killed from outside): replace it and try again.
      m->replace(p);
      if (attempt < 2) continue;
      fail(ErrorKind::kInternal, path + ": the reader processes keep ending");
    }
    char done = 0;
    ssize_t got;
    // Wait for the reader, at most the wall-clock limit: an importer that loops is killed.
    const auto t0 = std::chrono::steady_clock::now();
    for (;;) {
      const double left_s = m->limits.timeout_s - std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      pollfd pfd{p.sock, POLLIN, 0};
      const int r = left_s > 0 ? poll(&pfd, 1, int(std::min(left_s * 1000.0, 1e9)) + 1) : 0;
      if (r < 0 && errno == EINTR) continue;
      if (r == 0) {
        kill(p.pid, SIGKILL);
        m->replace(p);
        char limit[64];
        std::snprintf(limit, sizeof(limit), "%g", m->limits.timeout_s);
        fail(ErrorKind::kInput, path + ": the importer took longer than the load timeout (" + std::string(limit) +
                                    " s) and was stopped");
      }
      break;
    }
    while ((got = recv(p.sock, &done, 1, 0)) < 0 && errno == EINTR) {
    }
    if (got != 1) {  // it ended on this file
      const int status = m->replace(p);
      if (WIFSIGNALED(status))
        fail(ErrorKind::kInput, path + ": malformed file: the importer crashed on it (" + strsignal(WTERMSIG(status)) + ")");
      fail(ErrorKind::kInput, path + ": malformed file: the importer failed (exit status " +
                                  std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + ")");
    }
    m->give(p);
    return read_result(result.fd, path);
  }
}

bool reads_natively(const std::string& path, Loader loader) {
  if (loader == Loader::kAssimp || !native_format(path)) return false;
  if (loader == Loader::kNative) return true;
  // auto leaves to Assimp what only it decodes (Draco-compressed glTF).
  return !gltf_format(path) || gltf_native(path);
}

MeshLoadResult load_mesh(const std::string& path, bool textures, Loader loader, const LoaderLimits& limits) {
  // A reader process only for Assimp.
  return MeshLoaderPool(reads_natively(path, loader) ? 0 : 1, limits).load(path, textures, loader);
}
MeshLoadResult inspect_mesh(const std::string& path, Loader loader) {
  return MeshLoaderPool(reads_natively(path, loader) ? 0 : 1).inspect(path, loader);
}


uint32_t pack_color(float r, float g, float b) {
  auto c = [](float v) { return uint32_t(std::lround(std::isfinite(v) ? std::min(1.f, std::max(0.f, v)) * 255.f : 0.f)); };
  return (c(r) << 16) | (c(g) << 8) | c(b);
}

void MeshAppender::append(const MeshPiece& piece, const aiMatrix4x4& m) {
  Mesh& mesh = m_out.mesh;
  const size_t base = mesh.positions.size(), n = piece.num_vertices;
  // Grown geometrically: a scene that instances a small mesh thousands of times calls this once
  // per instance, and an exact resize would copy the whole array each time (quadratic).
  auto grow = [](auto& a, size_t size) {
    if (a.capacity() < size) a.reserve(std::max(size, 2 * a.capacity()));
    a.resize(size);
  };
  // The per-vertex attributes are made when a piece first has them (zero, or the material's colour,
  // for the vertices before it), so that files without them never write them.
  if (piece.normals && !m_normals) {
    m_normals = true;
    mesh.normals.assign(base, Vec3f{0, 0, 0});
  }
  if (piece.uvs && !m_uvs) {
    m_uvs = true;
    mesh.uvs.assign(base, Vec2f{0, 0});
  }
  if (piece.colors && !m_colors) {  // the earlier pieces' vertices take their material's colour
    m_colors = true;
    mesh.colors.resize(base);
    for (size_t r = 0; r < m_material_color_runs.size(); ++r) {
      const size_t end = r + 1 < m_material_color_runs.size() ? m_material_color_runs[r + 1].first : base;
      std::fill(mesh.colors.begin() + long(m_material_color_runs[r].first), mesh.colors.begin() + long(end),
                m_material_color_runs[r].second);
    }
  }
  grow(mesh.positions, base + n);
  if (m_normals) grow(mesh.normals, base + n);
  if (m_uvs) grow(mesh.uvs, base + n);
  if (m_colors) grow(mesh.colors, base + n);
  else m_material_color_runs.emplace_back(base, piece.material_color);  // (until a piece has colours)
  // Normals transform by the inverse transpose of the node matrix; missing ones are zero.
  aiMatrix3x3 nm(m);
  nm.Inverse().Transpose();
  tbb::parallel_for(tbb::blocked_range<size_t>(0, n, 1 << 14), [&](const tbb::blocked_range<size_t>& r) {
    for (size_t v = r.begin(); v < r.end(); ++v) {
      const aiVector3D p = m * piece.positions[v];
      mesh.positions[base + v] = {p.x, p.y, p.z};
      if (m_normals) {
        Vec3f nv{0, 0, 0};
        if (piece.normals) {
          aiVector3D t = nm * piece.normals[v];
          const float len = t.Length();
          if (len > 0 && std::isfinite(len)) nv = {t.x / len, t.y / len, t.z / len};
        }
        mesh.normals[base + v] = nv;
      }
      if (m_uvs) mesh.uvs[base + v] = piece.uvs ? Vec2f{piece.uvs[v].x, piece.uvs[v].y} : Vec2f{0, 0};
      if (m_colors)
        mesh.colors[base + v] = piece.colors ? pack_color(piece.colors[v].r, piece.colors[v].g, piece.colors[v].b)
                                             : piece.material_color;
    }
  });
  // Triangles with an index past the vertices are counted and left out (a serial pass where any is).
  const size_t nt = piece.num_triangles;
  const uint32_t* t = piece.triangles;
  const bool all_valid = tbb::parallel_reduce(
      tbb::blocked_range<size_t>(0, nt, 1 << 14), true,
      [&](const tbb::blocked_range<size_t>& r, bool ok) {
        for (size_t f = r.begin(); ok && f < r.end(); ++f) ok = t[3 * f] < n && t[3 * f + 1] < n && t[3 * f + 2] < n;
        return ok;
      },
      [](bool x, bool y) { return x && y; });
  const size_t first = mesh.mesh_ids.size();
  if (all_valid) {
    grow(mesh.indices, 3 * (first + nt));
    grow(mesh.mesh_ids, first + nt);
    grow(mesh.material_ids, first + nt);
    tbb::parallel_for(tbb::blocked_range<size_t>(0, nt, 1 << 14), [&](const tbb::blocked_range<size_t>& r) {
      for (size_t f = r.begin(); f < r.end(); ++f) {
        for (int k = 0; k < 3; ++k) mesh.indices[3 * (first + f) + size_t(k)] = uint32_t(base + t[3 * f + size_t(k)]);
        mesh.mesh_ids[first + f] = piece.mesh_index;
        mesh.material_ids[first + f] = piece.material_index;
      }
    });
    return;
  }
  for (size_t f = 0; f < nt; ++f) {
    if (t[3 * f] >= n || t[3 * f + 1] >= n || t[3 * f + 2] >= n) {
      ++m_out.dropped_bad_index;
      continue;
    }
    for (int k = 0; k < 3; ++k) mesh.indices.push_back(uint32_t(base + t[3 * f + size_t(k)]));
    mesh.mesh_ids.push_back(piece.mesh_index);
    mesh.material_ids.push_back(piece.material_index);
  }
}

void MeshAppender::finish(bool drop_normals, bool drop_uvs) {
  if (!m_normals || drop_normals) ValueArray<Vec3f>().swap(m_out.mesh.normals);
  if (!m_uvs || drop_uvs) std::vector<Vec2f>().swap(m_out.mesh.uvs);
  if (!m_colors) std::vector<uint32_t>().swap(m_out.mesh.colors);
  m_material_color_runs.clear();
}

}  // namespace voxtile

// Prototype (counting only, 2026-11-28): how often per-loop dipole bounds settle the winding test's
// decision per voxel. Build from the repository root after a build:
//   g++ -O2 -std=c++17 -I. scripts/bench-results/winding-dipole-prototype-2026-11-28.cpp build/libvoxtile_io.a \
//     build/libvoxtile_core.a -ltbb -lxxhash -lassimp -lz -lpng -lstb -lblosc -ldeflate -ldl -o proto
//   [SPLIT=N] ./proto RES [MESH]   (no MESH: 1.2M triangles of open tubes, generate tubes --tubes 2500 --rings 40
//   --sides 6 --length 0.5; SPLIT: loops cut into closed pieces of N edges)
#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <tuple>
#include "core/grid_spec.h"
#include "core/inside.h"
#include "core/inside_grid.h"
#include "core/meshgen.h"
#include "core/voxelize.h"
#include "io/mesh_reader.h"
using namespace voxtile;
struct V3 { double x, y, z; };
static V3 sub(V3 a, V3 b){ return {a.x-b.x,a.y-b.y,a.z-b.z}; }
static V3 crs(V3 a, V3 b){ return {a.y*b.z-a.z*b.y, a.z*b.x-a.x*b.z, a.x*b.y-a.y*b.x}; }
static double dot(V3 a, V3 b){ return a.x*b.x+a.y*b.y+a.z*b.z; }
static double len(V3 a){ return std::sqrt(dot(a,a)); }
int main(int argc, char** argv){
  const int res = argc > 1 ? atoi(argv[1]) : 64;
  Mesh mesh = argc > 2 ? load_mesh(argv[2]).mesh : make_tubes(2500, 40, 6, 1, 0.002, 0.5);
  GridOptions go; go.resolution = res;
  const GridSpec spec = make_grid_spec(mesh.bounds(), go);
  const std::vector<Vec3f> g = to_grid_space(mesh, spec);
  const InsideMesh m = prepare_inside(mesh, g, spec, 2, true, false);
  const auto& E = m.boundary; const InsideScale s = m.scale;
  std::vector<InsideEdge> O(E.begin(), E.end());  // oriented: mult > 0
  for (auto& e: O) if (e.mult < 0) { std::swap(e.au,e.bu); std::swap(e.av,e.bv); std::swap(e.aw,e.bw); e.mult=-e.mult; }
  auto world = [&](int64_t u, int64_t v, float w){ return V3{double(u)/1024.0*s.su, double(v)/1024.0*s.sv, double(w)*s.sw}; };
  // loops
  std::map<std::tuple<int64_t,int64_t,uint32_t>, std::vector<size_t>> from;
  auto key = [](int64_t u, int64_t v, float w){ uint32_t b; memcpy(&b,&w,4); return std::make_tuple(u,v,b); };
  for (size_t i=0;i<O.size();++i) from[key(O[i].au,O[i].av,O[i].aw)].push_back(i);
  std::vector<int> used(E.size(), 0); std::vector<std::vector<size_t>> loops; std::vector<size_t> open;
  for (size_t i=0;i<E.size();++i){ if (used[i]) continue; std::vector<size_t> L; size_t e=i; bool ok=true;
    while (true){ if (used[e]) { ok = e==i; break; } used[e]=1; L.push_back(e); auto it=from.find(key(O[e].bu,O[e].bv,O[e].bw)); if (it==from.end()||it->second.size()!=1||O[e].mult!=1){ok=false;break;} e=it->second[0]; }
    if (ok && L.size()>=3) loops.push_back(L); else for (size_t x: L) open.push_back(x); }
  struct Loop { V3 c; V3 mvec; double area, r; std::vector<size_t> e; };
  std::vector<Loop> LP;
  // Loops longer than `split` edges are cut into closed pieces of `split` edges, each closed through
  // the loop's centroid by two added edges (they cancel between neighbouring pieces).
  const size_t split = getenv("SPLIT") ? size_t(atoi(getenv("SPLIT"))) : 0;
  std::vector<InsideEdge> E2(E.begin(), E.end());  // E, then the added edges
  auto snap_pt = [&](V3 p, int64_t* u, int64_t* v, float* w) { *u = std::llround(p.x / s.su * 1024.0); *v = std::llround(p.y / s.sv * 1024.0); *w = float(p.z / s.sw); };
  for (auto& L: loops){ V3 c{0,0,0}; for(size_t e:L){ V3 a=world(O[e].au,O[e].av,O[e].aw); c.x+=a.x;c.y+=a.y;c.z+=a.z;} c.x/=L.size();c.y/=L.size();c.z/=L.size();
    int64_t cu, cv; float cw; snap_pt(c, &cu, &cv, &cw); const V3 cs = world(cu, cv, cw);
    const size_t piece = split && L.size() > split ? split : L.size();
    for (size_t b0 = 0; b0 < L.size(); b0 += piece) {
      Loop q; const size_t b1 = std::min(L.size(), b0 + piece);
      for (size_t x = b0; x < b1; ++x) q.e.push_back(L[x]);
      if (piece < L.size()) {  // the two added edges: c -> first vertex, last vertex -> c
        const InsideEdge& f = O[L[b0]]; const InsideEdge& l = O[L[b1 - 1]];
        E2.push_back({cu, cv, f.au, f.av, cw, f.aw, 1}); q.e.push_back(E2.size() - 1);
        E2.push_back({l.bu, l.bv, cu, cv, l.bw, cw, 1}); q.e.push_back(E2.size() - 1);
      }
      V3 cc{0,0,0}; size_t nv = 0; for (size_t x = b0; x < b1; ++x) { V3 a = world(O[L[x]].au,O[L[x]].av,O[L[x]].aw); cc.x+=a.x; cc.y+=a.y; cc.z+=a.z; ++nv; }
      if (piece < L.size()) { V3 a = world(O[L[b1-1]].bu,O[L[b1-1]].bv,O[L[b1-1]].bw); cc.x+=a.x+cs.x; cc.y+=a.y+cs.y; cc.z+=a.z+cs.z; nv += 2; }
      cc.x/=nv; cc.y/=nv; cc.z/=nv; q.c = cc;
      V3 mv{0,0,0}; double A=0, r=len(sub(cs, cc));
      for (size_t x = b0; x < b1; ++x) { V3 a=sub(world(O[L[x]].au,O[L[x]].av,O[L[x]].aw),cs), b=sub(world(O[L[x]].bu,O[L[x]].bv,O[L[x]].bw),cs); V3 y=crs(a,b); mv.x+=0.5*y.x; mv.y+=0.5*y.y; mv.z+=0.5*y.z; A+=0.5*len(y);
        r = std::max(r, len(sub(world(O[L[x]].au,O[L[x]].av,O[L[x]].aw), cc))); r = std::max(r, len(sub(world(O[L[x]].bu,O[L[x]].bv,O[L[x]].bw), cc))); }
      q.mvec=mv; q.area=A; q.r=r; LP.push_back(q); } }
  printf("edges %zu loops %zu open edges %zu\n", E.size(), LP.size(), open.size());
  if (LP.empty()) { size_t multi=0, dead=0; for (size_t i=0;i<E.size();++i){ auto it=from.find(key(E[i].bu,E[i].bv,E[i].bw)); if(it==from.end()) dead++; else if(it->second.size()!=1) multi++; } printf("dead %zu multi %zu mult0 %d\n", dead, multi, E.empty()?0:E[0].mult); return 0; }
  // validate dipole: B_loop vs sign * m.(c-p)/|c-p|^3 at far points
  std::mt19937 rng(3); double worst=0, worst_neg=0, sgnsum=0;
  for (int t=0;t<20000;++t){ const Loop& q=LP[rng()%LP.size()]; const int32_t i=rng()%m.dims.x, j=rng()%m.dims.y; const int64_t k=rng()%m.dims.z;
    const int64_t pu=inside_column(i), pv=inside_column(j); V3 p{double(pu)/1024*s.su, double(pv)/1024*s.sv, (k+0.5)*s.sw};
    V3 dvec=sub(q.c,p); const double d=len(dvec); const double duv=std::hypot(dvec.x,dvec.y); if (duv < 3*q.r) continue;
    double B=0; for(size_t e:q.e) B+=inside_edge_solid_angle(E2[e],pu,pv,k+0.5,s);
    const double dip=dot(q.mvec,dvec)/(d*d*d); sgnsum += B*dip;
    const double rem=q.area*q.r/std::pow(d-q.r,3);
    worst=std::max(worst, std::fabs(B - dip)/rem); worst_neg=std::max(worst_neg, std::fabs(B + dip)/rem); }
  printf("dipole sign corr %g, worst |B-dip| / (A r/(d-r)^3) %g (with -dip: %g)\n", sgnsum, worst, worst_neg); if (sgnsum < 0) worst = worst_neg;
  const double sign = sgnsum > 0 ? 1 : -1;
  // counting over sample columns
  long vox=0, settled=0; double near_edges=0; const double C = 2.0;  // proved: |g(x) - g(c)| <= |x - c| 2 / rho^3, rho >= d - r (the fan lies in the loop's ball)
  const double kPi=3.14159265358979323846;
  for (int t=0;t<(res>256?60:300);++t){ const int32_t i=rng()%m.dims.x, j=rng()%m.dims.y; const int64_t pu=inside_column(i), pv=inside_column(j);
    for (int64_t k=0;k<m.dims.z;++k){ V3 p{double(pu)/1024*s.su, double(pv)/1024*s.sv, (k+0.5)*s.sw};
      double B=0, R=0; long nn=0;
      for (const Loop& q: LP){ V3 dvec=sub(q.c,p); const double d=len(dvec), duv=std::hypot(dvec.x,dvec.y);
        if (duv < 3*q.r) { for(size_t e:q.e) B+=inside_edge_solid_angle(E2[e],pu,pv,k+0.5,s); nn+=q.e.size(); }
        else { B+=sign*dot(q.mvec,dvec)/(d*d*d); R+=C*q.area*q.r/std::pow(d-q.r,3); } }
      for (size_t e: open) { B+=inside_edge_solid_angle(E[e],pu,pv,k+0.5,s); ++nn; }
      // settled unless [B-R, B+R]/4pi contains a half-integer
      const double lo=(B-R)/(4*kPi), hi=(B+R)/(4*kPi);
      const bool open_ = std::floor(lo-0.5) != std::floor(hi-0.5);
      ++vox; settled += !open_; near_edges += nn; } }
  printf("res %d: voxels %ld settled %.2f%% near edges per voxel %.0f of %zu\n", res, vox, 100.0*settled/vox, near_edges/vox, E.size());
  // A walk over ranges of a column: the near loops' edges summed exactly at the range's ends (their
  // positive and negative parts are monotone along the column), the far loops' dipoles at its middle
  // with their change over the range (|grad| <= 2 |m| / rho^3) and their remainders; a range is
  // settled when its B interval holds no half turn (any crossing count), else split; a single voxel
  // left open takes the exact sum over every edge.
  {
    long near_terms=0, dipoles=0, full=0, cols=0, voxels=0;
    std::mt19937 rng2(7);
    for (int t=0;t<(res>256?60:200);++t){ const int32_t i=rng2()%m.dims.x, j=rng2()%m.dims.y; const int64_t pu=inside_column(i), pv=inside_column(j);
      const double px=double(pu)/1024*s.su, py=double(pv)/1024*s.sv;
      std::vector<size_t> nearE(open.begin(), open.end()); std::vector<const Loop*> far;
      for (const Loop& q: LP){ const double duv=std::hypot(q.c.x-px,q.c.y-py); if (duv < 3*q.r) nearE.insert(nearE.end(), q.e.begin(), q.e.end()); else far.push_back(&q); }
      auto parts=[&](int64_t k){ double P=0,N=0; for(size_t e: nearE){ const double o=inside_edge_solid_angle(E2[e],pu,pv,k+0.5,s); if(o>0) P+=o; else N+=o; } near_terms+=nearE.size(); return std::make_pair(P,N); };
      std::vector<std::tuple<int64_t,int64_t>> stack{{0, m.dims.z-1}};
      while(!stack.empty()){ auto [a,b]=stack.back(); stack.pop_back();
        auto pa=parts(a), pb = a==b ? pa : parts(b);
        const double wm=0.5*(a+b)+0.5, h=0.5*(b-a)*s.sw; double D=0, R=0;
        for (const Loop* q: far){ V3 p{px,py,wm*s.sw}; V3 dv=sub(q->c,p); const double d=len(dv); const double duv=std::hypot(dv.x,dv.y);
          const double rho = std::max(duv, std::fabs(dv.z) > h ? std::hypot(duv, std::fabs(dv.z)-h) : duv);
          D+=dot(q->mvec,dv)/(d*d*d); R+=2*len(q->mvec)*h/(rho*rho*rho) + 2*q->area*q->r/std::pow(rho-q->r,3); }
        dipoles+=far.size();
        const double lo=(pa.first+pb.second+D-R)/(4*kPi), hi=(pb.first+pa.second+D+R)/(4*kPi);
        if (std::floor(lo-0.5)==std::floor(hi-0.5)) { voxels+=b-a+1; continue; }
        if (a==b) { full++; voxels++; continue; }
        const int64_t mid=a+(b-a)/2; stack.push_back({mid+1,b}); stack.push_back({a,mid}); }
      cols++; }
    printf("walk res %d: %ld columns, per column: exact near terms %.0f, dipoles %.0f, full sums %.2f (x %zu edges); now about 20 x %zu edges\n", res, cols, double(near_terms)/cols, double(dipoles)/cols, double(full)/cols, E.size(), E.size());
  }
}

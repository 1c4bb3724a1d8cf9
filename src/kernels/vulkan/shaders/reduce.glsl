// Workgroup-wide sum and max over WG invocations (64 unless the including shader defines it
// first, a power of two): subgroupAdd/Max where the device has subgroup arithmetic (compiled
// with -DUSE_SUBGROUP), else a shared-memory tree.
#extension GL_KHR_shader_subgroup_basic : enable
#extension GL_KHR_shader_subgroup_arithmetic : enable

#ifndef WG
#define WG 64
#endif
shared float hearth_red[WG];

float wg_sum(float v) {
  const uint tid = gl_LocalInvocationID.x;
#ifdef USE_SUBGROUP
  v = subgroupAdd(v);
  if (subgroupElect()) hearth_red[gl_SubgroupID] = v;
  barrier();
  float s = 0.0;
  for (uint i = 0; i < gl_NumSubgroups; ++i) s += hearth_red[i];
  barrier();
  return s;
#else
  hearth_red[tid] = v;
  barrier();
  for (uint s = WG / 2; s > 0; s >>= 1) {
    if (tid < s) hearth_red[tid] += hearth_red[tid + s];
    barrier();
  }
  const float r = hearth_red[0];
  barrier();
  return r;
#endif
}

float wg_max(float v) {
  const uint tid = gl_LocalInvocationID.x;
#ifdef USE_SUBGROUP
  v = subgroupMax(v);
  if (subgroupElect()) hearth_red[gl_SubgroupID] = v;
  barrier();
  float s = hearth_red[0];
  for (uint i = 1; i < gl_NumSubgroups; ++i) s = max(s, hearth_red[i]);
  barrier();
  return s;
#else
  hearth_red[tid] = v;
  barrier();
  for (uint s = WG / 2; s > 0; s >>= 1) {
    if (tid < s) hearth_red[tid] = max(hearth_red[tid], hearth_red[tid + s]);
    barrier();
  }
  const float r = hearth_red[0];
  barrier();
  return r;
#endif
}

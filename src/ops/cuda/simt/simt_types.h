/* ops/cuda/simt/simt_types.h — CUDA's uint3 and dim3 for host code (the SIMT emulation and the
 * host stand-in of the CUDA runtime include it; nothing else is needed).
 *
 * uint3: three unsigned components (threadIdx, blockIdx). dim3: the same with every component
 * defaulting to 1 (grid and block sizes); converts to and from uint3. Source: CUDA C++
 * Programming Guide, "Built-in Vector Types" (dim3). No errors.
 */
#ifndef TRAINER_SIMT_TYPES_H
#define TRAINER_SIMT_TYPES_H

struct uint3 {
    unsigned x, y, z;
};

struct dim3 {
    unsigned x, y, z;
    constexpr dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1) : x(vx), y(vy), z(vz) {}
    constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
    constexpr operator uint3() const { return uint3{x, y, z}; }
};

#endif

// The types of a kernel's parameters as PTX declares them (`.entry name(.param .f32 name_param_1, ...)`), so
// that a declaration of another type of the same size (an f32 declared u32) is refused: the driver reports
// sizes only (cuFuncGetParamInfo). PTX tells floats from integers and 32 from 64 bits, not signedness, nor a
// pointer from a 64-bit integer.
#ifndef NUVEC_CUDA_PTX_PARAMETERS_H_
#define NUVEC_CUDA_PTX_PARAMETERS_H_

#include <map>
#include <string>

#include "core/streams.h"

namespace nuvec {

// One class per parameter: 'f' .f32, 'd' .f64, 'i' a 32-bit integer (.u32/.s32/.b32), 'l' a 64-bit integer
// or a pointer (.u64/.s64/.b64), '?' anything else (a struct as .b8 [N], a 16-bit type).
using PtxParameterClasses = std::string;

// Every `.entry` of `ptx` by name, with its parameters' classes. Text that is not PTX gives none.
std::map<std::string, PtxParameterClasses> ParsePtxEntries(const std::string& ptx);

// The class a parameter of `kind` has in PTX ('l' for a buffer: a device address).
char PtxClassOf(ParameterKind kind);

}  // namespace nuvec

#endif  // NUVEC_CUDA_PTX_PARAMETERS_H_

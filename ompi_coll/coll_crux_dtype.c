/* MPI datatypes and ops to crux's.  A datatype is classified by the type
 * Open MPI itself reduces it as (ompi_op_ddt_map), so aliases such as
 * MPI_INT / MPI_INT32_T / MPI_INTEGER of the same size reduce alike. */
#include "ompi_config.h"

#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/op/op.h"

#include "ompi_coll/coll_crux.h"

/* From ompi/op/op.h, which Debian's headers cannot compile (they lack
 * ompi/mpi/fortran/base/fint_2_int.h): the type Open MPI reduces each
 * predefined datatype as, by datatype id. */
OMPI_DECLSPEC extern int ompi_op_ddt_map[OMPI_DATATYPE_MAX_PREDEFINED];

static int signed_of_size(size_t size, crux_dtype_t *out)
{
    switch (size) {
    case 1: *out = CRUX_DT_INT8; return 0;
    case 2: *out = CRUX_DT_INT16; return 0;
    case 4: *out = CRUX_DT_INT32; return 0;
    case 8: *out = CRUX_DT_INT64; return 0;
    }
    return -1;
}

static int unsigned_of_size(size_t size, crux_dtype_t *out)
{
    switch (size) {
    case 1: *out = CRUX_DT_UINT8; return 0;
    case 2: *out = CRUX_DT_UINT16; return 0;
    case 4: *out = CRUX_DT_UINT32; return 0;
    case 8: *out = CRUX_DT_UINT64; return 0;
    }
    return -1;
}

static int real_of_size(size_t size, crux_dtype_t *out)
{
    switch (size) {
    case 2: *out = CRUX_DT_FLOAT16; return 0;
    case 4: *out = CRUX_DT_FLOAT; return 0;
    case 8: *out = CRUX_DT_DOUBLE; return 0;
    }
    return -1; /* 16-byte Fortran reals are quad precision, not long double */
}

int coll_crux_dtype(ompi_datatype_t *dtype, crux_dtype_t *out)
{
    size_t size;
    if (!ompi_datatype_is_predefined(dtype) || dtype->id < 0 ||
        dtype->id >= OMPI_DATATYPE_MAX_PREDEFINED ||
        ompi_datatype_type_size(dtype, &size) != OMPI_SUCCESS) {
        return -1;
    }
    switch (ompi_op_ddt_map[dtype->id]) {
    case OMPI_OP_BASE_TYPE_INT8_T:
    case OMPI_OP_BASE_TYPE_INT16_T:
    case OMPI_OP_BASE_TYPE_INT32_T:
    case OMPI_OP_BASE_TYPE_INT64_T:
    case OMPI_OP_BASE_TYPE_INTEGER:
    case OMPI_OP_BASE_TYPE_INTEGER1:
    case OMPI_OP_BASE_TYPE_INTEGER2:
    case OMPI_OP_BASE_TYPE_INTEGER4:
    case OMPI_OP_BASE_TYPE_INTEGER8:
    case OMPI_OP_BASE_TYPE_LONG:
    case OMPI_OP_BASE_TYPE_WCHAR: return signed_of_size(size, out);
    case OMPI_OP_BASE_TYPE_UINT8_T:
    case OMPI_OP_BASE_TYPE_UINT16_T:
    case OMPI_OP_BASE_TYPE_UINT32_T:
    case OMPI_OP_BASE_TYPE_UINT64_T:
    case OMPI_OP_BASE_TYPE_UNSIGNED_LONG:
    case OMPI_OP_BASE_TYPE_BYTE: return unsigned_of_size(size, out);
    case OMPI_OP_BASE_TYPE_FLOAT:
    case OMPI_OP_BASE_TYPE_DOUBLE:
    case OMPI_OP_BASE_TYPE_REAL:
    case OMPI_OP_BASE_TYPE_REAL2:
    case OMPI_OP_BASE_TYPE_REAL4:
    case OMPI_OP_BASE_TYPE_REAL8:
    case OMPI_OP_BASE_TYPE_DOUBLE_PRECISION: return real_of_size(size, out);
    case OMPI_OP_BASE_TYPE_LONG_DOUBLE: *out = CRUX_DT_LONG_DOUBLE; return 0;
    case OMPI_OP_BASE_TYPE_BOOL:
        *out = CRUX_DT_BOOL;
        return size == crux_dtype_size(CRUX_DT_BOOL) ? 0 : -1;
    case OMPI_OP_BASE_TYPE_LOGICAL: *out = CRUX_DT_LOGICAL32; return size == 4 ? 0 : -1;
    case OMPI_OP_BASE_TYPE_C_FLOAT_COMPLEX: *out = CRUX_DT_COMPLEX_FLOAT; return 0;
    case OMPI_OP_BASE_TYPE_C_DOUBLE_COMPLEX: *out = CRUX_DT_COMPLEX_DOUBLE; return 0;
    case OMPI_OP_BASE_TYPE_C_LONG_DOUBLE_COMPLEX: *out = CRUX_DT_COMPLEX_LONG_DOUBLE; return 0;
    default: /* pair types (MINLOC/MAXLOC), quad precision, unknown */ return -1;
    }
}

int coll_crux_op(struct ompi_op_t *op, crux_op_t *out)
{
    static const struct {
        MPI_Op mpi;
        crux_op_t crux;
    } ops[] = {
        { MPI_SUM, CRUX_OP_SUM },   { MPI_PROD, CRUX_OP_PROD }, { MPI_MAX, CRUX_OP_MAX },
        { MPI_MIN, CRUX_OP_MIN },   { MPI_LAND, CRUX_OP_LAND }, { MPI_LOR, CRUX_OP_LOR },
        { MPI_LXOR, CRUX_OP_LXOR }, { MPI_BAND, CRUX_OP_BAND }, { MPI_BOR, CRUX_OP_BOR },
        { MPI_BXOR, CRUX_OP_BXOR },
    };
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
        if (op == ops[i].mpi) {
            *out = ops[i].crux;
            return 0;
        }
    }
    return -1; /* user-defined, MINLOC/MAXLOC, REPLACE, NO_OP */
}

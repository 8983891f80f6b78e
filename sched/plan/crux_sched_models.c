/* The model mix of generated workloads, one table for `crux-sched gen-jobs`
 * and `crux-sim gen`.
 *
 * Eleven models, as the Crux paper's simulation (BERT, GPT, ResNet, NMT,
 * Multi-Interests, variants, in-house CTR and NLP models).  The figures are
 * round values for A100-class GPUs, chosen from the model sizes and the
 * parallelism such jobs use, not measured here:
 *   compute_s  compute time of one iteration on one GPU (its micro-batch),
 *   bytes      the network traffic of one iteration as an Allreduce buffer:
 *              4 B per parameter for data parallelism with fp32 gradients,
 *              2 B for fp16 gradients, 1.5 x 2 B for fully sharded data
 *              parallelism (all-gather forward and backward,
 *              reduce-scatter), the fp16 gradients of every tensor-parallel
 *              shard of a host for tensor parallelism inside hosts;
 *              recommendation models add their exchanged embedding
 *              gradients,
 *   overlap    how much of the compute the communication can hide behind
 *              (bucketed backward overlap, prefetching under FSDP),
 *   gpus       counts a job of that model asks for, equally likely.
 * fp32 or fp16: the mid-sized models (ResNet, BERT, NMT) are trained with
 * automatic mixed precision under PyTorch DDP or Horovod, which keeps fp32
 * master weights and so reduces fp32 gradients (4 B per parameter: 1.34 GB
 * for BERT-large's 335M); fp16 reduction there needs an explicit
 * compression hook.  The billion-parameter models are trained with
 * DeepSpeed or Megatron-style fp16/bf16 gradient reduction, 2 B per
 * parameter. */
#include "sched/crux_sched.h"

static const crux_sched_model_t models[] = {
    /* name            share  gpus                  n  compute bytes    overlap */
    { "resnet50", 0.16, { 1, 2, 4, 8, 16 }, 5, 0.10, 102e6, 0.6 }, /* 25.6M, fp32 */
    { "resnet152", 0.06, { 8, 16, 32 }, 3, 0.20, 241e6, 0.6 },     /* 60.2M, fp32 */
    { "bert-base", 0.10, { 4, 8, 16 }, 3, 0.08, 440e6, 0.5 },      /* 110M, fp32 */
    { "bert-large", 0.12, { 8, 16, 32 }, 3, 0.22, 1.34e9, 0.5 },   /* 335M, fp32 */
    { "nmt", 0.07, { 8, 16 }, 2, 0.18, 852e6, 0.5 },               /* transformer-big, 213M, fp32 */
    { "multi-interests", 0.07, { 8, 16 }, 2, 0.12, 2.0e9, 0.3 },   /* + embeddings */
    { "ctr", 0.08, { 8, 16, 32 }, 3, 0.08, 1.2e9, 0.2 },           /* DLRM-like */
    { "nlp", 0.07, { 16, 32 }, 2, 0.50, 2.0e9, 0.4 },              /* 1B, fp16 */
    { "gpt-1.3b", 0.10, { 16, 32, 64 }, 3, 0.80, 2.6e9, 0.3 },     /* fp16 DP */
    { "llama-7b", 0.09, { 32, 64 }, 2, 1.10, 21e9, 0.7 },          /* FSDP */
    { "gpt-13b", 0.08, { 64, 128 }, 2, 4.00, 26e9, 0.2 },          /* TP 8 + DP */
};

int crux_sched_models(const crux_sched_model_t **out)
{
    *out = models;
    return (int)(sizeof(models) / sizeof(models[0]));
}

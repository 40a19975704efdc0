//! The suggestion catalogue: what to change for each finding, as concrete code or config (PyTorch,
//! with TensorFlow/JAX where it differs), and the effect to expect. Rules attach entries with the
//! evidence of the case at hand (`why`).
//!
//! A [`Suggestion`] holds only its id and `why`: the catalogue's words are `'static` and looked up
//! by id, so a diagnosis (made every tick) copies none of them. On the wire a suggestion still
//! carries its title, how-to and effect, so a script reading `vramio check --json` or `/ws` needs
//! no catalogue; reading one back takes them from this catalogue by id.

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A catalogue entry made specific to one finding.
#[derive(Clone, Debug, PartialEq)]
pub struct Suggestion {
    pub id: SuggestionId,
    /// The evidence in this case, with numbers.
    pub why: String,
}

impl Suggestion {
    pub fn title(&self) -> &'static str {
        self.id.entry().0
    }
    /// Concrete code or configuration.
    pub fn how_to(&self) -> &'static str {
        self.id.entry().1
    }
    /// What to expect after the change.
    pub fn effect(&self) -> &'static str {
        self.id.entry().2
    }
}

/// A suggestion as it is written on the wire.
#[derive(Serialize, JsonSchema)]
#[serde(rename = "Suggestion")]
struct Wire<'a> {
    id: SuggestionId,
    title: &'a str,
    /// Concrete code or configuration.
    how_to: &'a str,
    /// The evidence in this case, with numbers.
    why: &'a str,
    /// What to expect after the change.
    effect: &'a str,
}

impl Serialize for Suggestion {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        Wire {
            id: self.id,
            title: self.title(),
            how_to: self.how_to(),
            why: &self.why,
            effect: self.effect(),
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Suggestion {
    /// The words come from this catalogue by id; those on the wire are not needed.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Read {
            id: SuggestionId,
            why: String,
        }
        let Read { id, why } = Read::deserialize(deserializer)?;
        Ok(Suggestion { id, why })
    }
}

impl JsonSchema for Suggestion {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        Wire::schema_name()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        Wire::json_schema(generator)
    }
}

/// Stable ids of the catalogue entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SuggestionId {
    GradientAccumulation,
    MixedPrecision,
    ActivationCheckpointing,
    ShardedTraining,
    CpuOffload,
    ExpandableSegments,
    IsolateGpus,
    KillOrphans,
    DataloaderWorkers,
    StageOnLocalNvme,
    SeparateReaders,
    CacheInRam,
    ShardedFormats,
    GpuDecoding,
    FewerSyncPoints,
    AsyncCheckpoint,
    KeepLastK,
    SaveWeightsOnly,
    MoveOutputDirs,
    LogRotation,
    LargerShm,
    ReduceHostMemory,
    RaiseBatchSize,
    CheckGpuHealth,
}

impl SuggestionId {
    /// `(title, how_to, effect)` of the entry.
    fn entry(self) -> (&'static str, &'static str, &'static str) {
        use SuggestionId as S;
        match self {
            S::GradientAccumulation => (
                "Smaller micro-batch with gradient accumulation",
                "Halve the per-step batch and accumulate: `loss = model(x).loss / k; loss.backward(); \
                 if (step + 1) % k == 0: opt.step(); opt.zero_grad()` (Lightning: \
                 `Trainer(accumulate_grad_batches=k)`; Keras 3: `optimizer = keras.optimizers.AdamW(..., \
                 gradient_accumulation_steps=k)`; JAX/Optax: `optax.MultiSteps(opt, every_k_schedule=k)`).",
                "Activation memory drops roughly in proportion to the micro-batch; the effective batch \
                 and the convergence stay the same, throughput drops a little.",
            ),
            S::MixedPrecision => (
                "bf16 mixed precision",
                "`with torch.autocast(device_type=\"cuda\", dtype=torch.bfloat16): loss = model(x)` \
                 (fp16 also needs `torch.amp.GradScaler`); TensorFlow: \
                 `keras.mixed_precision.set_global_policy(\"mixed_bfloat16\")`; JAX: compute in \
                 `jnp.bfloat16` (e.g. Flax `dtype=jnp.bfloat16`, params in float32).",
                "Activations take about half the memory and tensor cores run faster; accuracy is \
                 usually unchanged with bf16.",
            ),
            S::ActivationCheckpointing => (
                "Activation (gradient) checkpointing",
                "Wrap blocks: `torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False)` \
                 (Hugging Face: `model.gradient_checkpointing_enable()`); TensorFlow: \
                 `tf.recompute_grad(block)`; JAX: `jax.checkpoint(block)` (`flax.linen.remat`).",
                "Activation memory falls from O(layers) to about O(sqrt(layers)) for roughly 20-30% \
                 more compute.",
            ),
            S::ShardedTraining => (
                "Shard parameters, gradients and optimizer state (FSDP / ZeRO)",
                "`from torch.distributed.fsdp import fully_shard; fully_shard(model)` (FSDP2), or \
                 DeepSpeed `\"zero_optimization\": {\"stage\": 2}` (3 shards parameters too); JAX: shard \
                 with `jax.sharding.NamedSharding` over a device mesh.",
                "Per-GPU memory for model state shrinks by about the number of GPUs (stage 3).",
            ),
            S::CpuOffload => (
                "Offload optimizer state or parameters to CPU",
                "FSDP: `fully_shard(model, offload_policy=CPUOffloadPolicy())`; DeepSpeed: \
                 `\"offload_optimizer\": {\"device\": \"cpu\", \"pin_memory\": true}`.",
                "Frees the optimizer state from GPU memory (often 2x the parameters with Adam) at \
                 the cost of PCIe traffic each step.",
            ),
            S::ExpandableSegments => (
                "Let the caching allocator grow segments instead of fragmenting",
                "`export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` before starting the job; \
                 check `torch.cuda.memory_reserved()` against `memory_allocated()`. TensorFlow: \
                 `TF_GPU_ALLOCATOR=cuda_malloc_async`; JAX: `XLA_PYTHON_CLIENT_MEM_FRACTION=.9`.",
                "Less memory lost to fragmentation when shapes vary; fewer OOMs at the same peak.",
            ),
            S::IsolateGpus => (
                "Give each job its own GPUs",
                "`CUDA_VISIBLE_DEVICES=0,1 python train.py` per job (Slurm: `--gpus`; Docker: \
                 `--gpus '\"device=0,1\"'`), so no other process allocates on the same device.",
                "The job gets the whole device memory; another tenant no longer causes its OOMs.",
            ),
            S::KillOrphans => (
                "Free memory held by dead or foreign processes",
                "List holders with `nvidia-smi --query-compute-apps=pid,used_memory --format=csv`; \
                 end stale ones (`kill <pid>`; a zombie's parent or leftover DataLoader workers: \
                 `pkill -P <parent>`); in containers restart the container that holds them.",
                "The memory comes back to the job without changing the training code.",
            ),
            S::DataloaderWorkers => (
                "Load batches in parallel, pinned and prefetched",
                "`DataLoader(ds, batch_size=b, num_workers=min(8, os.cpu_count()), pin_memory=True, \
                 persistent_workers=True, prefetch_factor=4)` and `x.to(\"cuda\", non_blocking=True)`; \
                 tf.data: `.map(f, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)`; \
                 JAX: Grain `num_workers`.",
                "Loading overlaps with compute; GPU utilization rises while the data source keeps up.",
            ),
            S::SeparateReaders => (
                "Keep the other job's reads off this job's disk",
                "Give each job its own device or its own staged copy (Slurm: a per-job `--tmp` on \
                 local NVMe, filled in the prolog); or cap the heavy reader with cgroup v2 \
                 `io.max` (`systemctl set-property <unit> IOReadBandwidthMax=\"/dev/nvme1n1 500M\"`, \
                 Kubernetes: a separate local volume per pod); or schedule the two apart.",
                "This job's loader gets the device's bandwidth back; its GPU utilization rises \
                 while the other job's reads stop queueing in front of it.",
            ),
            S::StageOnLocalNvme => (
                "Stage the dataset on local NVMe",
                "Copy it once per node before training: `rsync -a /shared/dataset/ /local_nvme/dataset/` \
                 (or `fpsync`/`mpifileutils dcp` for many files) and point the loader there.",
                "Reads come from a device with far lower latency and higher throughput than network \
                 or spinning storage.",
            ),
            S::CacheInRam => (
                "Cache the dataset in RAM (page cache or a RAM disk)",
                "If it fits in free memory, warm the page cache once (`vmtouch -t /data/ds` or \
                 `cat files > /dev/null`) or copy it to `/dev/shm`; tf.data: `.cache()` before \
                 shuffling.",
                "After the first epoch reads no longer touch the disk.",
            ),
            S::ShardedFormats => (
                "Use sharded, sequential or memory-mapped formats",
                "Pack small files into shards: WebDataset `.tar` shards (`wds.WebDataset(urls)`), \
                 TFRecord, HDF5/Zarr, or `np.memmap`/Arrow for arrays; read large sequential chunks.",
                "Large sequential reads replace per-file opens and random small reads; await drops.",
            ),
            S::GpuDecoding => (
                "Decode and augment on the GPU",
                "NVIDIA DALI (`fn.decoders.image(..., device=\"mixed\")`), `torchvision.io.decode_jpeg(..., \
                 device=\"cuda\")`, or move augmentation into the model step.",
                "CPU decode work moves to the GPU; CPU-bound loaders keep up.",
            ),
            S::FewerSyncPoints => (
                "Give the GPU more work per launch and fewer host syncs",
                "Raise the batch size if memory allows; avoid per-step `.item()`, `.cpu()` and \
                 `print(tensor)`; try `torch.compile(model)` or CUDA graphs; JAX: keep the step under \
                 `jax.jit` and log asynchronously.",
                "Kernels stay queued back to back; utilization rises.",
            ),
            S::AsyncCheckpoint => (
                "Checkpoint asynchronously",
                "`torch.distributed.checkpoint.async_save(state_dict, checkpoint_id=path)` (keep the \
                 returned future and wait on it before the next save); Orbax: \
                 `ocp.AsyncCheckpointer`; TensorFlow: `tf.train.CheckpointOptions(enable_async=True)`.",
                "Training continues while the checkpoint is written; the periodic dips disappear.",
            ),
            S::KeepLastK => (
                "Keep only the last k checkpoints",
                "Hugging Face: `TrainingArguments(save_total_limit=3)`; Lightning: \
                 `ModelCheckpoint(save_top_k=3)`; Orbax: `CheckpointManagerOptions(max_to_keep=3)`; \
                 TensorFlow: `tf.train.CheckpointManager(ckpt, dir, max_to_keep=3)`.",
                "Checkpoint space stops growing without bound.",
            ),
            S::SaveWeightsOnly => (
                "Save weights only where optimizer state is not needed",
                "`torch.save(model.state_dict(), path)` (no optimizer), or safetensors \
                 `save_file(model.state_dict(), path)`; Keras: `model.save_weights(path)`.",
                "Checkpoints shrink to about a third with Adam (no first and second moments).",
            ),
            S::MoveOutputDirs => (
                "Move outputs and caches off the full filesystem",
                "Point them at a larger mount: `HF_HOME=/big/hf`, `TORCH_HOME=/big/torch`, \
                 `TMPDIR=/big/tmp`, and the trainer's `output_dir`.",
                "The full filesystem stops growing; the job does not die on ENOSPC.",
            ),
            S::LogRotation => (
                "Rotate and cap logs",
                "logrotate with `size 100M` and `rotate 5`; journald `SystemMaxUse=1G`; lower \
                 TensorBoard/W&B logging frequency; `docker run --log-opt max-size=100m`.",
                "Logs stop eating the space checkpoints need.",
            ),
            S::LargerShm => (
                "Give the container a larger /dev/shm",
                "`docker run --shm-size=16g ...` (or `--ipc=host`); Kubernetes: an `emptyDir` with \
                 `medium: Memory` mounted at `/dev/shm`.",
                "DataLoader workers can pass batches through shared memory without bus errors.",
            ),
            S::ReduceHostMemory => (
                "Use less host memory for data loading",
                "Fewer workers or a smaller `prefetch_factor`; keep datasets as memory-mapped arrays \
                 instead of Python lists (copy-on-read of refcounts duplicates them per worker); \
                 stop other memory-heavy processes.",
                "MemAvailable recovers; no swapping and no OOM kill of the job.",
            ),
            S::RaiseBatchSize => (
                "Raise the batch size",
                "Increase the per-GPU batch size step by step while watching GPU memory (scale the \
                 learning rate accordingly, e.g. linearly with warm-up).",
                "Higher throughput per step while memory stays below the warning level.",
            ),
            S::CheckGpuHealth => (
                "Check the GPU's health",
                "`nvidia-smi -q` and `dmesg | grep -i xid` for Xid errors; if the GPU fell off the \
                 bus, drain the node and reset it (`nvidia-smi -r` or a reboot).",
                "A healthy device, or a node taken out of service before jobs fail on it.",
            ),
        }
    }

    /// The catalogue entry with this case's evidence.
    pub fn with_why(self, why: String) -> Suggestion {
        Suggestion { id: self, why }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wire_carries_the_words_and_reading_back_takes_them_from_the_catalogue() {
        let s = SuggestionId::KeepLastK.with_why("/ckpt fills in 2 h".into());
        let json = serde_json::to_value(&s).expect("encodes");
        assert_eq!(json["id"], "keep_last_k");
        assert_eq!(json["why"], "/ckpt fills in 2 h");
        assert_eq!(json["title"], s.title());
        assert_eq!(json["how_to"], s.how_to());
        assert_eq!(json["effect"], s.effect());
        assert!(!s.title().is_empty() && !s.how_to().is_empty() && !s.effect().is_empty());
        // Words on the wire that differ (an older peer's) give way to this catalogue's.
        let mut other = json.clone();
        other["title"] = "something else".into();
        let back: Suggestion = serde_json::from_value(other).expect("decodes");
        assert_eq!(back, s);
        assert_eq!(back.title(), s.title());
        // Without its id it is not a suggestion.
        let err = serde_json::from_str::<Suggestion>(r#"{"why": "x"}"#).expect_err("no id");
        assert!(err.to_string().contains("id"), "{err}");
    }
}

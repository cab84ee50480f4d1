//! [`SpmdModel`] (docs/libtorchneuron.md §2, §5): one ranked task per local rank, each on its own NeuronCore,
//! loaded with `nrt_load_collectives` (ctx id = rank), run in parallel.
//!
//! Parallelism is `std::thread::scope`, one scoped thread per rank after the first (rank 0 runs
//! on the calling thread). Not rayon's global pool: the ranks of a collective launch wait for
//! each other in the runtime's rendezvous, so all of them must run at once, and that pool has
//! one thread per core (2 here, for 8 ranks). A rayon pool of `local_ranks - 1` threads started
//! once per model was tried and measured (`cargo bench -p nrtsim-testkit --bench bind`, outputs
//! kept alive): no faster at 8 × 64 KiB (0.72–1.01× of one-after-another, against 1.04–1.08×
//! for scoped threads) and slower at 8 × 4 MiB (0.65–0.70× against 0.73–1.16×, the same runs),
//! likely because its idle workers keep looking for work before they sleep, on a saturated
//! machine; so the ranks keep scoped threads.
//! Every forward of more than one rank runs the ranks at once, however small their inputs: a
//! collective program's ranks meet in the runtime's rendezvous, so a rank run before its peers
//! start would wait for them until it times out. (A size threshold that ran small ranks one after
//! another was removed for that reason; with the threshold bypassed, threads measured 1.04–1.08×
//! of one-after-another at 8 × 64 KiB, so it saved nothing.) A traced forward is no exception:
//! each rank records into its own fork of the trace (`abi::trace::Trace::fork`), and the forks
//! are joined in rank order, so the trace is the same text as if the ranks had run one after
//! another (deterministic goldens), and a collective program can be traced.

use std::sync::Arc;

use super::error::BindError;
use super::host_tensor::HostTensor;
use super::model::run;
use super::tensor_set::Ctx;
use super::tensor_set::{self, Layout, LoadPlacement, Loaded, VarTable};
use super::validate::ValidatePath;
use super::{ForwardOutput, ModelOptions, OutputTensors, Zeroed};
use abi::metaneff;
use abi::runtime::prelude::*;

/// `torch.classes.neuron.SPMDModel`: the same NEFF on `local_ranks` NeuronCores.
pub struct SpmdModel {
    ctx: Ctx,
    ranks: Vec<Loaded>,
}

impl std::fmt::Debug for SpmdModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpmdModel").field("local_ranks", &self.ranks.len()).finish_non_exhaustive()
    }
}

impl SpmdModel {
    /// Loads the NEFF once per local rank `r` in `0..local_ranks`, on NeuronCore
    /// `options.vnc + r` (one core each), with `nrt_load_collectives(ctx_device_id = r,
    /// ctx_device_count = world_size)`, and builds each rank's tensor sets, states and weights
    /// (`options.weights` is given to every rank).
    ///
    /// # Errors
    /// [`BindError::InvalidRanks`] unless `1 <= local_ranks <= world_size`; the layout errors of
    /// [`super::Model::new`]; a load error wrapped in [`BindError::Rank`] (ranks loaded before it
    /// are released).
    pub fn new(
        runtime: Arc<dyn Runtime>,
        neff: &[u8],
        metaneff_bytes: &[u8],
        local_ranks: i64,
        world_size: i64,
        options: ModelOptions,
    ) -> Result<SpmdModel, BindError> {
        SpmdModel::with_rank_weights(
            runtime,
            neff,
            metaneff_bytes,
            local_ranks,
            world_size,
            options,
            &[],
        )
    }

    /// As [`SpmdModel::new`], with weights of each rank's own: rank `r` takes its states and
    /// weights from `rank_weights[r]` where that exists, and from `options.weights` otherwise
    /// (a sharded checkpoint holds a different shard of each weight per rank, under one key).
    ///
    /// # Errors
    /// Those of [`SpmdModel::new`], and [`BindError::RankCount`] when `rank_weights` is neither
    /// empty nor one entry per local rank.
    pub fn with_rank_weights(
        runtime: Arc<dyn Runtime>,
        neff: &[u8],
        metaneff_bytes: &[u8],
        local_ranks: i64,
        world_size: i64,
        options: ModelOptions,
        rank_weights: &[super::Weights],
    ) -> Result<SpmdModel, BindError> {
        let (Ok(n_ranks), Ok(world)) = (u32::try_from(local_ranks), u32::try_from(world_size))
        else {
            return Err(BindError::InvalidRanks { local_ranks, world_size });
        };
        if n_ranks == 0 || n_ranks > world {
            return Err(BindError::InvalidRanks { local_ranks, world_size });
        }
        if !rank_weights.is_empty() && rank_weights.len() != n_ranks as usize {
            return Err(BindError::RankCount {
                expected: n_ranks as usize,
                actual: rank_weights.len(),
            });
        }
        let meta = metaneff::Decoded::decode_with_limits(metaneff_bytes, &options.metaneff_limits)?;
        let vars = VarTable::of_neff(neff, &options.neff_read_options);
        let unresolved = Layout::from_decoded(&meta, &vars)?;
        let mut layout = unresolved.clone();
        layout.resolve_internal(rank_weights.first().unwrap_or(&options.weights))?;
        let mut model =
            SpmdModel { ctx: Ctx::new(runtime, options.trace, layout), ranks: Vec::new() };
        for rank in 0..n_ranks {
            let placement = LoadPlacement {
                vnc: options.vnc.max(0) + rank as i32,
                vnc_count: 1,
                collectives: Some((rank, world)),
            };
            let wrap = |source| BindError::Rank { rank: rank as usize, source: Box::new(source) };
            // A rank with weights of its own loads them through a layout of its own; the launch
            // reads only names, dtypes and shapes from the layout, which every rank shares.
            let loaded = match rank_weights.get(rank as usize) {
                Some(weights) if rank > 0 => {
                    let mut rank_layout = unresolved.clone();
                    rank_layout.resolve_internal(weights).map_err(wrap)?;
                    let mut rank_ctx = model.ctx.clone();
                    rank_ctx.layout = Arc::new(rank_layout);
                    tensor_set::load(&rank_ctx, neff, placement)
                }
                _ => tensor_set::load(&model.ctx, neff, placement),
            }
            .map_err(wrap)?;
            model.ranks.push(loaded);
        }
        Ok(model)
    }

    /// libtorchneuron's checks of every rank's inputs (the ranked path), without launching: a
    /// caller that checks all ranks before a collective launch keeps a refused rank from leaving
    /// its peers waiting in the rendezvous.
    ///
    /// # Errors
    /// The first rank's validate error, in rank order, wrapped in [`BindError::Rank`].
    pub fn validate(&self, per_rank_inputs: &[Vec<HostTensor>]) -> Result<(), BindError> {
        for (rank, inputs) in per_rank_inputs.iter().enumerate() {
            super::validate::validate_layout(&self.ctx.layout, inputs, ValidatePath::Ranked)
                .map_err(|error| BindError::Rank {
                    rank,
                    source: Box::new(BindError::Validate(error)),
                })?;
        }
        Ok(())
    }

    /// As [`super::Model::donated_inputs`], for every rank's list.
    pub fn donated_inputs(&self) -> Vec<usize> {
        self.ctx.layout.donated_positions()
    }

    /// The number of local ranks.
    pub fn local_ranks(&self) -> usize {
        self.ranks.len()
    }

    /// Runs every rank on its own inputs (user inputs only; the ranked path of `validate`, with
    /// no count check) in parallel, and returns each rank's outputs in rank order.
    ///
    /// # Errors
    /// [`BindError::RankCount`] unless there is one input list per rank; the first failing
    /// rank's error, in rank order, wrapped in [`BindError::Rank`].
    pub fn forward_ranked(
        &mut self,
        per_rank_inputs: &[Vec<HostTensor>],
    ) -> Result<Vec<ForwardOutput>, BindError> {
        self.forward_ranked_into(per_rank_inputs, &Zeroed)
    }

    /// [`SpmdModel::forward_ranked`], reading each output it makes into the tensor `outputs`
    /// gives for it (called from each rank's thread), as [`Model::forward_into`] does.
    ///
    /// # Errors
    /// As [`SpmdModel::forward_ranked`] and [`Model::forward_into`].
    ///
    /// [`Model::forward_into`]: crate::Model::forward_into
    pub fn forward_ranked_into(
        &mut self,
        per_rank_inputs: &[Vec<HostTensor>],
        outputs: &dyn OutputTensors,
    ) -> Result<Vec<ForwardOutput>, BindError> {
        if per_rank_inputs.len() != self.ranks.len() {
            return Err(BindError::RankCount {
                expected: self.ranks.len(),
                actual: per_rank_inputs.len(),
            });
        }
        // All ranks at once (a collective program's ranks wait for each other), each tracing
        // into its own fork of the trace, joined in rank order afterwards (see the module doc).
        let forks: Vec<Ctx> = self.ranks.iter().map(|_| self.ctx.fork()).collect();
        let results: Vec<Result<ForwardOutput, BindError>> = if self.ranks.len() == 1 {
            vec![run(
                &forks[0],
                &mut self.ranks[0],
                &per_rank_inputs[0],
                ValidatePath::Ranked,
                (0, outputs),
            )]
        } else {
            // Ranks 1.. on scoped threads, rank 0 on the calling thread (one spawn fewer).
            let mut work = forks.iter().zip(self.ranks.iter_mut()).zip(per_rank_inputs).enumerate();
            let first = work.next();
            std::thread::scope(|scope| {
                let handles: Vec<_> = work
                    .map(|(rank, ((ctx, loaded), inputs))| {
                        scope.spawn(move || {
                            run(ctx, loaded, inputs, ValidatePath::Ranked, (rank, outputs))
                        })
                    })
                    .collect();
                let mut results = Vec::with_capacity(handles.len() + 1);
                if let Some((rank, ((ctx, loaded), inputs))) = first {
                    results.push(run(ctx, loaded, inputs, ValidatePath::Ranked, (rank, outputs)));
                }
                results.extend(handles.into_iter().map(|handle| {
                    handle.join().unwrap_or(Err(BindError::ThreadPanicked { thread: "rank" }))
                }));
                results
            })
        };
        self.ctx.join(&forks);
        results
            .into_iter()
            .enumerate()
            .map(|(rank, result)| {
                result.map_err(|source| BindError::Rank { rank, source: Box::new(source) })
            })
            .collect()
    }

    /// Releases every rank's sets and tensors and unloads every rank's model.
    ///
    /// # Errors
    /// The first failed release, wrapped in [`BindError::Rank`].
    pub fn unload(&mut self) -> Result<(), BindError> {
        let mut first = Ok(());
        for (rank, loaded) in self.ranks.drain(..).enumerate() {
            if let Err(source) = tensor_set::release(&self.ctx, loaded) {
                if first.is_ok() {
                    first = Err(BindError::Rank { rank, source: Box::new(source) });
                }
            }
        }
        first
    }
}

impl Drop for SpmdModel {
    fn drop(&mut self) {
        let _ = self.unload();
    }
}

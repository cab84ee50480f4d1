//! The handle tables of one runtime: which owner each handle the trait hands out stands for.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use abi::runtime::{ModelId, SetId, TensorId};

use crate::sys::{OwnedModel, OwnedSet, OwnedTensor};

/// The data behind `mutex`, also after a panic while it was held (a handle table stays usable).
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The handle tables of one runtime.
#[derive(Default)]
pub(crate) struct Handles {
    pub(crate) tensors: Mutex<HashMap<TensorId, Arc<OwnedTensor>>>,
    pub(crate) sets: Mutex<HashMap<SetId, Arc<OwnedSet>>>,
    pub(crate) models: Mutex<HashMap<ModelId, Arc<OwnedModel>>>,
}

impl Handles {
    /// Releases everything still held: sets first (they keep tensors), then tensors, then
    /// models.
    pub(crate) fn release_all(&self) {
        let sets = std::mem::take(&mut *lock(&self.sets));
        drop(sets);
        let tensors = std::mem::take(&mut *lock(&self.tensors));
        drop(tensors);
        let models = std::mem::take(&mut *lock(&self.models));
        drop(models);
    }
}

"""gp.train, TF1's tf.train namespace: optimizers, the global step, learning-rate decays,
checkpoints (Saver, latest_checkpoint, load_checkpoint).

    train_op = gp.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
    sess.run(train_op, feed_dict=...)      # one step: gradients, then in-place updates
"""

from graphops.training.learning_rate_decay import (cosine_decay, cosine_decay_restarts,
                                                   exponential_decay, inverse_time_decay,
                                                   natural_exp_decay, piecewise_constant,
                                                   polynomial_decay)
from graphops.training.optimizer import Optimizer
from graphops.training.optimizers import (AdagradOptimizer, AdamOptimizer,
                                          GradientDescentOptimizer, MomentumOptimizer,
                                          RMSPropOptimizer)
from graphops.training.optimizers_more import (AdadeltaOptimizer, FtrlOptimizer,
                                               ProximalAdagradOptimizer,
                                               ProximalGradientDescentOptimizer)
from graphops.training.training_util import (assert_global_step, create_global_step,
                                             get_global_step, get_or_create_global_step,
                                             global_step)
from graphops.training.saver import Saver, SaverDef
from graphops.training.meta_graph_io import export_meta_graph, import_meta_graph
from graphops.interchange.checkpoint_reader import (NewCheckpointReader, list_variables,
                                                    load_checkpoint, load_variable)
from graphops.interchange.checkpoint_state import (checkpoint_exists, get_checkpoint_state,
                                                   latest_checkpoint)
from graphops.api.summary import summary_iterator  # noqa: F401  (tf.train's reader of event files)
from graphops.api.io import write_graph  # noqa: F401  (tf.train.write_graph, TF1's name)
from graphops.api.tf1_names import missing_tf1_attribute


def __getattr__(name):
    raise missing_tf1_attribute("train", name)

"""After training: many run directories compared (`report`), plotted (`plots`), their
examples ranked (`selection`), their checkpoints evaluated (`checkpoints`), and a sweep's
report written when it ends (`sweep_report`). Above the evaluation and the training job's
outputs; nothing below imports it."""

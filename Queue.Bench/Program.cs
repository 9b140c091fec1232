return Queue.Bench.BenchMain.Run(args);

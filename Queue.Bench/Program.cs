return await Queue.Bench.BenchMain.RunAsync(args);

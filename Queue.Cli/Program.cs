return await Queue.Cli.QueueCli.RunAsync(args, Console.Out, Console.Error, CancellationToken.None);

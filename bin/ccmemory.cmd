@echo off
setlocal
rem ccmemory from a plugin install on Windows: the same script as bin/ccmemory, run by python3, else python,
rem isolated (-I) so that no file of the project it runs in is imported. cmd looks for a program in the
rem current folder (the project) before PATH unless NoDefaultCurrentDirectoryInExePath is set: it is, here.
set NoDefaultCurrentDirectoryInExePath=1
where $PATH:python3 >nul 2>nul
if %errorlevel%==0 (python3 -I "%~dp0ccmemory" %*) else (python -I "%~dp0ccmemory" %*)
